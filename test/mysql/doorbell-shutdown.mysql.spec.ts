import { LockShutdownError } from 'nestjs-db-locks';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** A socket among the process's active handles (Node's `_getActiveHandles`, undocumented: read with care). */
interface SocketHandle {
  readonly remotePort?: number;
  readonly destroyed?: boolean;
}

/**
 * The sockets of this process still open to the server at `port` (a half-closed one counts: it keeps Node alive),
 * except those in `before`: the suite runs many files in one worker process, and their sockets are not this test's.
 */
function socketsTo(port: number, before: ReadonlySet<SocketHandle> = new Set()): SocketHandle[] {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return handles.filter(
    (handle): handle is SocketHandle => (handle as SocketHandle | null)?.remotePort === port && !before.has(handle as SocketHandle),
  );
}

/** The doorbells sleeping in the server now. */
const SLEEPING_DOORBELLS = `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT /* nestjs-db-locks doorbell %'`;

describeOnMysql('MySQL/MariaDB: app.close() during a wait leaves no socket open (the process can exit)', () => {
  const apps = trackApps(createLockApp);
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  afterAll(async () => {
    await apps.closeAll();
    await db?.drop();
  });

  it('closes the doorbell sleeping for a pending wait: no socket to the server is left once the apps have closed', async () => {
    const port = Number(new URL(db.url).port || 3306);
    const before = new Set(socketsTo(port));
    const holder = await apps.start(db.url, { appId: 'holder' });
    const waiter = await apps.start(db.url, { appId: 'waiter', waitRecheckMs: 60_000 });
    const held = await holder.locks.tryLocks(['EXIT_WRITE']);
    const waiting = waiter.locks.tryLocks(['EXIT_WRITE'], { waitMs: 60_000 }).catch((error: unknown) => error);
    // The waiter's doorbell sleeps in the server (a statement of 30 s), its socket among this process's handles.
    await until(async () => (await db.query(SLEEPING_DOORBELLS)).length === 1);
    expect(socketsTo(port, before).length).toBeGreaterThan(0);

    await waiter.close();
    expect(await waiting).toBeInstanceOf(LockShutdownError);
    await holder.locks.releaseLocks(held);
    await holder.close();
    // Every connection of both apps is gone, the doorbell's too: destroyed, not half-closed. A half-closed doorbell
    // stays open until the server notices, in its sleep, that the client left (MariaDB looks every 5 s: here ~4.5 s
    // after the close, the doorbell having just started its sleep) or the sleep ends (30 s).
    await until(() => socketsTo(port, before).length === 0, 2000).catch(() => undefined);
    expect(socketsTo(port, before).map((socket) => ({ remotePort: socket.remotePort, destroyed: socket.destroyed }))).toEqual([]);
  });
});
