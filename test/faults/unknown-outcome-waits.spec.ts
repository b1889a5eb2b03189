import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { watchProcess } from '../support/fault-load.js';
import { startFaultProxy, type FaultProxy } from '../support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

/** In the statement text (`locking_try_acquire…`) and in the prepared statement's name. */
const ACQUIRE = 'try_acquire';
/** Long: an attempt made after the first one is one a notification asked for. */
const RECHECK_MS = 3000;

/**
 * A waiter's attempt whose answer is lost after it committed (the connection reset: what a failover does to the
 * statements in flight). The wait is not over: it resolves the outcome by looking, and gets the grant that landed.
 */
describe('a wait through an attempt whose outcome is unknown', () => {
  afterEach(stopLeftovers);
  let db: TestDatabase;
  let proxy: FaultProxy;
  let proxied: LockApp;
  let direct: LockApp;
  const watcher = watchProcess();

  beforeAll(async () => {
    db = await createTestDatabase();
    proxy = await startFaultProxy(db.url);
    proxied = await createLockApp(proxy.via(db.url), { appId: 'waiting', waitRecheckMs: RECHECK_MS, queryTimeoutMs: 1000 }, 6);
    direct = await createLockApp(db.url, { appId: 'holding' }, 4);
  });
  afterAll(async () => {
    await proxied.close();
    await direct.close();
    await proxy.close();
    await db.drop();
    watcher.stop();
  });
  afterEach(() => expect(watcher.problems).toEqual([]));

  const rowsOf = (name: string) =>
    db.query<{ stamp: string; app_id: string }>('SELECT stamp, app_id FROM locking WHERE lock_name = $1', [name]);

  it('granted although its answer was lost: the waiter gets that grant (not an error, not a second grant)', async () => {
    const held = await direct.locks.tryLocks(['ORPHAN_WRITE']);
    const waiting = proxied.locks.tryLocks(['ORPHAN_WRITE'], { waitMs: 10_000 });
    await until(async () => (await db.query('SELECT 1 FROM locking_waiters WHERE lock_name = $1', ['ORPHAN'])).length === 1);
    await sleep(200); // its first attempt has answered: the next one is the one the release's notification asks for
    const fired = proxy.arm(ACQUIRE, 'reset-after-commit');
    await direct.locks.releaseLocks(held);
    await fired;
    const stamp = await waiting;
    const [row] = await rowsOf('ORPHAN');
    expect(row?.app_id).toBe('waiting');
    expect(stamp).toBe(Number(row!.stamp)); // the grant that landed, and no other
    expect(await rowsOf('ORPHAN')).toHaveLength(1);
    expect(proxied.locks.isHeld(stamp)).toBe(true);
    // It is renewed and released like any grant.
    await proxied.locks.releaseLocks(stamp);
    expect(await rowsOf('ORPHAN')).toEqual([]);
    expect(await db.query('SELECT 1 FROM locking_waiters')).toEqual([]);
  });

  it('nothing granted and the answer lost: the wait goes on, and is granted at the release', async () => {
    const held = await direct.locks.tryLocks(['ONWARD_WRITE']);
    const fired = proxy.arm(ACQUIRE, 'reset-after-commit');
    const started = performance.now();
    const waiting = proxied.locks.tryLocks(['ONWARD_WRITE'], { waitMs: 10_000 }).catch((e: unknown) => e);
    await fired; // its first attempt: busy, and its answer lost
    await sleep(300);
    await direct.locks.releaseLocks(held);
    const stamp = await waiting;
    expect(typeof stamp).toBe('number');
    expect(stamp).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(RECHECK_MS + 2000);
    await proxied.locks.releaseLocks(stamp as number);
    expect(await rowsOf('ONWARD')).toEqual([]);
  });
});
