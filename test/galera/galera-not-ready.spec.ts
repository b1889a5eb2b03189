import { createLockApp, trackApps } from '../support/lock-app.js';
import { createGaleraDatabase, describeOnOwnGalera, galeraNode, type GaleraDatabase } from './support/galera.js';

/**
 * A node that is not in the primary component (cut off from the others) refuses statements with errno 1047 until it
 * rejoins: a wait and a start-up on it ride through within their budgets, and health says why meanwhile.
 */
describeOnOwnGalera('Galera: a node out of the primary component, ridden through (issue 49)', () => {
  const apps = trackApps(createLockApp);
  let db: GaleraDatabase;

  beforeAll(async () => {
    db = await createGaleraDatabase();
  });
  afterEach(async () => {
    await galeraNode(2, 'heal').catch(() => undefined);
    await apps.closeAll();
  });
  afterAll(() => db?.drop());

  it('a wait on the cut-off node goes on until the node rejoins, then is granted; health says why meanwhile', async () => {
    const holder = await apps.start(db.urls[0]!, { appId: 'nr-holder' });
    const waiter = await apps.start(db.urls[1]!, { appId: 'nr-waiter', leaseMs: 20_000 });
    const held = await holder.locks.tryLocks(['NR_WRITE']);
    expect(held).toBeGreaterThan(0);
    await galeraNode(2, 'isolate');
    const health = await waiter.locks.getHealth();
    expect(health.healthy).toBe(false);
    expect(health.problems).toEqual(
      expect.arrayContaining([expect.stringContaining('is not in the primary component of its cluster')]),
    );
    const startedAt = performance.now();
    const waiting = waiter.locks.tryLocks(['NR_WRITE'], { waitMs: 30_000 });
    await holder.locks.releaseLocks(held);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await galeraNode(2, 'heal');
    const stamp = await waiting; // not LockStoreError (1047) within milliseconds, as before
    expect(stamp).toBeGreaterThan(held);
    expect(performance.now() - startedAt).toBeGreaterThan(2000);
    await waiter.locks.releaseLocks(stamp);
    expect((await waiter.locks.getHealth()).healthy).toBe(true);
  });

  it('an instance started on the cut-off node waits within startupTimeoutMs and starts once it rejoins', async () => {
    await galeraNode(2, 'isolate');
    const startedAt = performance.now();
    const starting = apps.start(db.urls[1]!, { appId: 'nr-starter', startupTimeoutMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await galeraNode(2, 'heal');
    const app = await starting; // not a start-up failure at once, as before
    expect(performance.now() - startedAt).toBeGreaterThan(2000);
    const stamp = await app.locks.tryLocks(['NR_START_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    await app.locks.releaseLocks(stamp);
  });
});
