import { AppIdInUseError } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { startLingeringProxy, type LingeringProxy } from '../support/lingering-proxy.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';

/** How long the server goes on running a session after its client closed it (the proxy's delay). */
const LINGER_MS = 8000;

/**
 * `app.close()`, then at once a new application with the same `appId` in the same process (a test suite's
 * `beforeEach`, a hot reload), while the server has not yet noticed that the closed application's session is gone and
 * still holds the app id for it: the new one starts (it ends that session of its own process, never taken for a twin),
 * and a live twin is still refused.
 */
for (const dialect of DIALECTS) {
  dialect.describe(`A new application with the appId of one just closed in this process (${dialect.name})`, () => {
    let db: TestDatabase;
    let proxy: LingeringProxy;
    const apps = trackApps(createLockApp);
    beforeAll(async () => {
      db = await dialect.createDatabase();
      proxy = await startLingeringProxy(db.url, LINGER_MS);
    });
    afterEach(() => apps.closeAll());
    afterAll(async () => {
      await proxy?.close();
      await db?.drop();
    });

    it('starts at once and grants, though the server still runs the closed session that held the appId', async () => {
      const url = proxy.via(db.url);
      for (let life = 1; life <= 3; life++) {
        const app = await apps.start(url, { appId: 'restarted' });
        const stamp = await app.locks.tryLocks(['ledger_WRITE']);
        expect(stamp).toBeGreaterThan(0);
        await app.locks.releaseLocks(stamp);
        const started = performance.now();
        await app.close();
        // Within LINGER_MS of the close: the server still holds the app id for the closed session.
        const next = await apps.start(url, { appId: 'restarted' });
        expect(performance.now() - started).toBeLessThan(LINGER_MS);
        const again = await next.locks.tryLocks(['ledger_WRITE']);
        expect(again).toBeGreaterThan(stamp);
        await next.locks.releaseLocks(again);
        await next.close();
      }
    }, 60_000);

    it('still refuses a live twin in this process, and one started after a closed life of the appId', async () => {
      const url = proxy.via(db.url);
      const first = await apps.start(url, { appId: 'twinned' });
      await first.close();
      const live = await apps.start(url, { appId: 'twinned' });
      await expect(apps.start(url, { appId: 'twinned' })).rejects.toBeInstanceOf(AppIdInUseError);
      const stamp = await live.locks.tryLocks(['orders_WRITE']);
      expect(stamp).toBeGreaterThan(0); // the live one kept its app id
      await live.locks.releaseLocks(stamp);
    }, 60_000);
  });
}
