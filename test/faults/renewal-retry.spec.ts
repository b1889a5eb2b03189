import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { watchProcess } from '../support/fault-load.js';
import { useProxiedPair } from '../support/proxied-pair.js';
import { until } from '../support/until.js';

const LEASE_MS = 3000;
/** Two ticks are 4 s apart, more than the lease: only a renewal made before the next tick keeps the grants. */
const RENEW_MS = 2000;
/** In the renewal's prepared statement name (`nestjs_db_locks_renew_v4`). */
const RENEWAL = 'nestjs_db_locks_renew';

/**
 * A renewal that fails is made again as soon as the database answers, not at the next tick (the Patroni spec's etcd
 * outage: a leader whose renewal failed at one tick, and whose next tick came past its lease, lost its role). One
 * renewal tick of the proxied instance fails (its connection reset before the statement reached the server); the
 * next tick would come 2 s later, past the 3 s lease of grants taken just after the tick before it. Another instance,
 * connected directly, runs a reaper every 100 ms and tries to take the names.
 */
describe('a renewal that fails', () => {
  const pair = useProxiedPair(
    { appId: 'renewer', leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS, reaperIntervalMs: 0, queryTimeoutMs: 1000 },
    { appId: 'taker', reaperIntervalMs: 100 },
  );
  const watcher = watchProcess();
  afterAll(() => watcher.stop());
  afterEach(() => expect(watcher.problems).toEqual([]));
  const leaseEndOf = async (stamp: number) =>
    (await pair.db.query<{ end: string }>('SELECT lease_expires::text AS end FROM locking_log WHERE stamp = $1', [stamp]))[0]?.end;

  it('is made again at once: the holder keeps its grants past the tick that failed, and nobody else gets them', async () => {
    const locks = pair.proxied.locks;
    // Right after a tick renewed the first grant, the second is taken: both leases end 3 s after that tick.
    const first = await locks.tryLocks(['RENEWED_A_WRITE']);
    const leaseBefore = await leaseEndOf(first);
    await until(async () => (await leaseEndOf(first)) !== leaseBefore, RENEW_MS + 2000);
    const tickAt = performance.now();
    const second = await locks.tryLocks(['RENEWED_B_WRITE']);
    const signals = [locks.getSignal(first), locks.getSignal(second)];
    const secondLease = await leaseEndOf(second);

    // The next tick's renewal fails; the tick after it comes 4 s after the one that renewed: past both leases.
    await pair.proxy.arm(RENEWAL, 'reset-before');
    const failedAt = performance.now();
    await until(async () => (await leaseEndOf(second)) !== secondLease, 1000);
    const renewedAfterMs = performance.now() - failedAt;

    // Past the end of the leases the failed tick would have left, and past the direct instance's reaper after it.
    await sleep(Math.max(0, tickAt + LEASE_MS + 600 - performance.now()));
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
    expect([locks.isHeld(first), locks.isHeld(second)]).toEqual([true, true]);
    expect(await pair.direct.locks.tryLocks(['RENEWED_A_WRITE'])).toBe(0);
    expect(await pair.direct.locks.tryLocks(['RENEWED_B_WRITE'])).toBe(0);
    expect(renewedAfterMs).toBeLessThan(RENEW_MS); // made again before the next tick, not by it

    await locks.releaseLocks(first);
    await locks.releaseLocks(second);
  });
});
