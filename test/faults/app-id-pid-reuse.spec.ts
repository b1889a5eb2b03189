import { Test } from '@nestjs/testing';
import { AppIdInUseError, LockService } from 'nestjs-db-locks';
import { InstanceLock } from '../../lib/services/instance-lock.service.js';
import { LockStore } from '../../lib/store/lock.store.js';
import { DIALECTS } from '../support/dialects.js';
import { lockAppImports, trackApps, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';

/** The sessions this process's instances closed after holding an app id (server pid → when, `performance.now()`). */
const closedHere = (InstanceLock as unknown as { closedHere: Map<string, Map<number, number>> }).closedHere;

/** The server pid (PostgreSQL backend, MariaDB connection id) of the session that holds `app`'s app id. */
const holderPid = (app: LockApp) => app.app.get(LockStore).appIdHolderPid();

/** Starts an application of `appId` on `url`; closes what it opened when its start fails, and rethrows. */
async function startOrClose(url: string, appId: string): Promise<LockApp> {
  const moduleRef = await Test.createTestingModule({ imports: lockAppImports(url, { appId }) }).compile();
  moduleRef.useLogger(false);
  try {
    const app = await moduleRef.init();
    return { app, locks: app.get(LockService), close: () => app.close() };
  } catch (error) {
    await moduleRef.close();
    throw error;
  }
}

// Issue 50, item 7. An instance of this process closed its session a minute ago; the server has since given that
// session's pid to a twin's session, which now holds the app id. A new instance of the app id in this process must
// take the twin for what it is (a session it closed counts as its own for 10 s only): refuse to start, and leave the
// twin's session alone. The reuse is simulated deterministically: the closed session's pid is recorded as the twin's.
for (const dialect of DIALECTS) dialect.describe(`a closed session's pid reused by a twin (${dialect.name})`, () => {
  let db: TestDatabase;
  const apps = trackApps((appId: string) => startOrClose(db.url, appId));

  beforeAll(async () => {
    db = await dialect.createDatabase();
  }, 60_000);
  afterEach(async () => {
    closedHere.clear();
    await apps.closeAll();
  });
  afterAll(() => db?.drop());

  it('a second instance is refused after the 10 s of its own closed session, and the twin keeps its session and grant', async () => {
    const twin = await apps.start('reused');
    const stamp = await twin.locks.tryLocks(['orders_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    const pid = await holderPid(twin);
    expect(pid).toEqual(expect.any(Number));
    // As if an instance of this process had held the app id on a session with that pid, closed 60 s ago.
    closedHere.set('reused', new Map([[pid!, performance.now() - 60_000]]));

    await expect(apps.start('reused')).rejects.toBeInstanceOf(AppIdInUseError);

    expect(await holderPid(twin)).toBe(pid); // its session was not ended
    expect(twin.locks.isHeld(stamp)).toBe(true);
    const next = await twin.locks.tryLocks(['ledger_WRITE']); // it still grants: not fenced
    expect(next).toBeGreaterThan(stamp);
    await twin.locks.releaseLocks(next);
    await twin.locks.releaseLocks(stamp);
  }, 30_000);
});
