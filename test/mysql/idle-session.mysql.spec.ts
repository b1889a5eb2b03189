import { AppIdInUseError } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { canStartMariadb, startRestartableMariadb, type RestartableServer } from '../support/restartable-server.js';

/** The connection id holding app id `appId`'s instance lock in the server's lock database (null when none). */
const HOLDER = (appId: string) =>
  `SELECT IS_USED_LOCK(CONCAT('nestjs-db-locks:', LEFT(SHA2(CONCAT(DATABASE(), CHAR(0), '${appId}'), 256), 48))) AS id`;

// Managed servers and proxies often end idle sessions after minutes (`wait_timeout`); the app id's session idles
// between renewals for as long as the instance lives. A server of its own: the setting is global.
(canStartMariadb() ? describe : describe.skip)('MySQL/MariaDB: the app id session on a server with wait_timeout = 2 s', () => {
  let server: RestartableServer;
  const apps = trackApps(createLockApp);

  beforeAll(async () => {
    server = await startRestartableMariadb(['--wait-timeout=2']);
  });
  afterEach(() => apps.closeAll());
  afterAll(() => server?.destroy());

  it('keeps its session (and the app id) however long it idles: a same-appId process is refused all along', async () => {
    // Renewals far apart: only the session itself keeps the app id between them.
    const app = await apps.start(server.url, { appId: 'idler', leaseMs: 60_000, renewIntervalMs: 30_000 });
    const stamp = await app.locks.tryLocks(['IDLE_WRITE']);
    const first = (await server.tryQuery<{ id: number | null }>(HOLDER('idler')))?.[0]?.id;
    expect(first).toBeTruthy();
    const seen = new Set<unknown>();
    for (let elapsed = 0; elapsed < 5_000; elapsed += 250) {
      seen.add((await server.tryQuery<{ id: number | null }>(HOLDER('idler')))?.[0]?.id ?? null);
      await sleep(250);
    }
    expect([...seen]).toEqual([first]); // never free, never another session
    await expect(createLockApp(server.url, { appId: 'idler' })).rejects.toBeInstanceOf(AppIdInUseError);
    expect(app.locks.isHeld(stamp)).toBe(true);
    await app.locks.releaseLocks(stamp);
  });
});
