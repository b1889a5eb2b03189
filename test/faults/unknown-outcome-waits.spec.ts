import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { watchProcess } from '../support/fault-load.js';
import { useProxiedPair } from '../support/proxied-pair.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

/** In the statement text (`locking_try_acquire…`, a waiter's `locking_wait_acquire…`) and in the prepared statement's name. */
const ACQUIRE = '_acquire';
/** Long: an attempt made after the first one is one a notification asked for. */
const RECHECK_MS = 3000;

/**
 * A waiter's attempt whose answer is lost after it committed (the connection reset: what a failover does to the
 * statements in flight). The wait is not over: it resolves the outcome by looking, and gets the grant that landed.
 */
describe('a wait through an attempt whose outcome is unknown', () => {
  afterEach(stopLeftovers);
  const pair = useProxiedPair({ appId: 'waiting', waitRecheckMs: RECHECK_MS, queryTimeoutMs: 1000 }, { appId: 'holding' });
  const watcher = watchProcess();
  afterAll(() => watcher.stop());
  afterEach(() => expect(watcher.problems).toEqual([]));

  it('granted although its answer was lost: the waiter gets that grant (not an error, not a second grant)', async () => {
    const held = await pair.direct.locks.tryLocks(['ORPHAN_WRITE']);
    const waiting = pair.proxied.locks.tryLocks(['ORPHAN_WRITE'], { waitMs: 10_000 });
    await until(async () => (await pair.db.query('SELECT 1 FROM locking_waiters WHERE lock_name = $1', ['ORPHAN'])).length === 1);
    await sleep(200); // its first attempt has answered: the next one is the one the release's notification asks for
    const fired = pair.proxy.arm(ACQUIRE, 'reset-after-commit');
    // Freed by an operator's forced release, which hands nothing over (a release would grant it to the waiter in its
    // own commit): the waiter's own attempt, woken by the notification, makes the grant.
    await pair.db.query(`SELECT * FROM locking_force_release($1, 'test', 'freed for the waiter to take')`, [held]);
    await fired;
    const stamp = await waiting;
    const [row] = await pair.rowsOf('ORPHAN');
    expect(row?.app_id).toBe('waiting');
    expect(stamp).toBe(Number(row!.stamp)); // the grant that landed, and no other
    expect(await pair.rowsOf('ORPHAN')).toHaveLength(1);
    expect(pair.proxied.locks.isHeld(stamp)).toBe(true);
    // It is renewed and released like any grant.
    await pair.proxied.locks.releaseLocks(stamp);
    expect(await pair.rowsOf('ORPHAN')).toEqual([]);
    expect(await pair.db.query('SELECT 1 FROM locking_waiters')).toEqual([]);
  });

  it('nothing granted and the answer lost: the wait goes on, and is granted at the release', async () => {
    const held = await pair.direct.locks.tryLocks(['ONWARD_WRITE']);
    const fired = pair.proxy.arm(ACQUIRE, 'reset-after-commit');
    const started = performance.now();
    const waiting = pair.proxied.locks.tryLocks(['ONWARD_WRITE'], { waitMs: 10_000 }).catch((e: unknown) => e);
    await fired; // its first attempt: busy, and its answer lost
    await sleep(300);
    await pair.direct.locks.releaseLocks(held);
    const stamp = await waiting;
    expect(typeof stamp).toBe('number');
    expect(stamp).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(RECHECK_MS + 2000);
    await pair.proxied.locks.releaseLocks(stamp as number);
    expect(await pair.rowsOf('ONWARD')).toEqual([]);
  });
});
