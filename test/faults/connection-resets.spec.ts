import { LockStoreError, type LockSpec } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { watchProcess } from '../support/fault-load.js';
import { useProxiedPair } from '../support/proxied-pair.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

const LEASE_MS = 1500;
const RENEW_MS = 200;
const REAPER_MS = 300;
const QUERY_TIMEOUT_MS = 1000;
/** In the statement text (`locking_try_acquire…`) and in the prepared statement's name (`nestjs_db_locks_try_acquire…`). */
const ACQUIRE = 'try_acquire';
/** In `locking_release…` and `nestjs_db_locks_release…`. */
const RELEASE = '_release';

/**
 * A proxy between one instance and the database resets or stalls the connection in the middle of an acquisition or
 * a release: the outcomes the instance cannot know. Another instance, connected directly, runs the reaper.
 */
describe('connections reset or stalled in the middle of a statement', () => {
  afterEach(stopLeftovers); // a failed test must not leave its load or sampler running
  const pair = useProxiedPair(
    { appId: 'proxied', leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS, reaperIntervalMs: 0, queryTimeoutMs: QUERY_TIMEOUT_MS },
    { appId: 'direct', reaperIntervalMs: REAPER_MS },
  );
  const watcher = watchProcess();
  afterAll(() => watcher.stop());
  afterEach(() => expect(watcher.problems).toEqual([]));
  const leaseEndOf = async (stamp: string) =>
    (await pair.db.query<{ end: string }>('SELECT lease_expires::text AS end FROM locking_log WHERE stamp = $1', [stamp]))[0]?.end;

  /** Milliseconds until the direct instance can take `name` for write (then it releases it). */
  async function timeUntilFree(name: string): Promise<number> {
    const from = performance.now();
    await until(async () => {
      const stamp = await pair.direct.locks.tryLocks([`${name}_WRITE`]);
      if (stamp > 0) await pair.direct.locks.releaseLocks(stamp);
      return stamp > 0;
    }, LEASE_MS + REAPER_MS + 5000);
    return performance.now() - from;
  }

  it.each([
    ['reset-after-commit', 'committed, the answer lost', 1] as const,
    ['stall', 'committed, no answer within queryTimeoutMs', 1] as const,
    ['reset-after-commit', 'committed, the answer lost', 2] as const,
    ['stall', 'committed, no answer within queryTimeoutMs', 2] as const,
  ])('an acquisition %s (%s; a group of %d): outcomeUnknown, never renewed, free within lease + reaper interval', async (fault, _what, size) => {
    const name = `AMB_${fault.replace(/-/g, '_').toUpperCase()}_${size}`;
    const group: LockSpec[] = size === 1 ? [`${name}_WRITE` as const] : [`${name}_WRITE` as const, `${name}_B_READ` as const];
    const fired = pair.proxy.arm(ACQUIRE, fault);
    const error = await pair.proxied.locks.tryLocks(group).catch((e: unknown) => e);
    await fired;
    expect(error).toBeInstanceOf(LockStoreError);
    expect((error as LockStoreError).outcomeUnknown).toBe(true);
    // The grant exists, held by nobody the instance knows about...
    const [row] = await pair.rowsOf(name);
    expect(row?.app_id).toBe('proxied');
    const failedAt = performance.now();
    const leaseEnd = await leaseEndOf(row!.stamp);
    // ... and it is never renewed (several renewal intervals pass; a reaper may free it meanwhile, which does not
    // move its lease end either).
    await sleep(3 * RENEW_MS);
    expect(await leaseEndOf(row!.stamp)).toBe(leaseEnd);
    await timeUntilFree(name);
    if (size > 1) await timeUntilFree(`${name}_B`);
    const freeAfter = performance.now() - failedAt;
    // Freed within a lease and a reaper interval of the grant, on the database clock (the test's polling, slow on a
    // loaded machine, is not counted), plus a late reaper tick.
    const [{ held_ms: heldMs }] = await pair.db.query<{ held_ms: number }>(
      'SELECT (extract(epoch FROM ended - acquired) * 1000)::float8 AS held_ms FROM locking_log WHERE stamp = $1',
      [row!.stamp],
    );
    expect(heldMs).toBeLessThan(LEASE_MS + REAPER_MS + 500);
    process.stdout.write(`fault figures: an ambiguous grant (${fault}) was free ${freeAfter.toFixed(0)} ms after the failure\n`);
    expect((await pair.db.query('SELECT status FROM locking_log WHERE stamp = $1', [row!.stamp]))[0]).toEqual({ status: 'REAPED' });
    // A single caller's statements run on the instance's own session, which the stall left running on the server
    // with the app id's lock: the instance ends that session of its own and grants again (no false "twin").
    const again = await pair.proxied.locks.tryLocks(group);
    expect(again).toBeGreaterThan(0);
    await pair.proxied.locks.releaseLocks(again);
  });

  it('an acquisition reset before it reached the server: outcomeUnknown (the client cannot tell), nothing granted', async () => {
    const fired = pair.proxy.arm(ACQUIRE, 'reset-before');
    const error = await pair.proxied.locks.tryLocks(['NEVER_WRITE']).catch((e: unknown) => e);
    await fired;
    expect(error).toBeInstanceOf(LockStoreError);
    expect((error as LockStoreError).outcomeUnknown).toBe(true);
    expect(await pair.rowsOf('NEVER')).toEqual([]);
    // The instance goes on granting (its own session may have been the one reset: it takes its app id back).
    const stamp = await pair.proxied.locks.tryLocks(['NEVER_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    await pair.proxied.locks.releaseLocks(stamp);
  });

  it.each([
    ['reset-before', 'nothing ran'] as const,
    ['reset-after-commit', 'released, the answer lost'] as const,
    ['stall', 'released, no answer within queryTimeoutMs'] as const,
  ])('a release %s (%s): releaseLocks throws, the grant is not renewed, and it is freed in the background', async (fault, _what) => {
    const name = `REL_${fault.replace(/-/g, '_').toUpperCase()}`;
    const stamp = await pair.proxied.locks.tryLocks([`${name}_WRITE`]);
    const fired = pair.proxy.arm(RELEASE, fault);
    const failedAt = performance.now();
    const error = await pair.proxied.locks.releaseLocks(stamp).catch((e: unknown) => e);
    await fired;
    expect(error).toBeInstanceOf(LockStoreError);
    expect(pair.proxied.locks.isHeld(stamp)).toBe(false);
    // Released again on the next renewal ticks (or already released by the statement whose answer was lost).
    await until(async () => (await pair.rowsOf(name)).length === 0, 2 * RENEW_MS + 2000);
    const freedMs = performance.now() - failedAt;
    const [log] = await pair.db.query<{ status: string; version: number }>(
      'SELECT status, version FROM locking_log WHERE stamp = $1',
      [stamp],
    );
    // Never renewed after the failed release: the acquisition (1), at most one renewal that was already in flight
    // when the release failed, and the release; released, not reaped: before any reaper could have freed it.
    expect(log!.status).toBe('RELEASED');
    expect(log!.version).toBeLessThanOrEqual(3);
    process.stdout.write(`fault figures: a failed release (${fault}) was freed ${freedMs.toFixed(0)} ms after the failure\n`);
  });
});
