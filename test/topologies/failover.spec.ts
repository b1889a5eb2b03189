import { AppIdInUseError } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startLoad, watchProcess } from '../support/fault-load.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { stopLeftovers } from '../support/leftovers.js';
import { standbyBinariesInstalled, startStandbyCluster, type StandbyCluster } from '../support/standby-cluster.js';
import { until } from '../support/until.js';

// CI installs postgresql-15 when missing and sets REQUIRE_PG_STANDBY: there a missing binary fails instead of skipping.
const runs = standbyBinariesInstalled() || process.env.REQUIRE_PG_STANDBY === '1';
const describeFailover = runs ? describe : describe.skip;

const LEASE_MS = 8000;
const options = { leaseMs: LEASE_MS, renewIntervalMs: 250, reaperIntervalMs: 300, queryTimeoutMs: 1000 };
// Long enough that a waiter granted by its timer after the failover shows (it re-checks, and registers and listens
// again, only at this interval): woken by a notification, it is at once.
const RECHECK_MS = 8000;
/** A wake-up by notification, with room for a loaded machine; a deaf waiter would take seconds. */
const WOKEN_MS = 1000;
const INSTANCES = ['f1', 'f2', 'f3'];

/**
 * A primary and a synchronous standby (two PostgreSQL 15 clusters, `pg_basebackup -R`), three instances through a TCP
 * proxy, under load: the primary is killed (`pg_ctl stop -m immediate`'s SIGQUIT), the standby promoted and the proxy switched,
 * as Patroni with HAProxy does.
 */
describeFailover('a failover to a synchronous standby', () => {
  afterEach(stopLeftovers);
  let cluster: StandbyCluster;
  let apps: LockApp[];
  const watcher = watchProcess();

  beforeAll(async () => {
    cluster = await startStandbyCluster();
    apps = [];
    // f3's waiters re-check every 20 ms: their attempts are in flight when the primary dies (unknown outcomes).
    for (const appId of INSTANCES) {
      const waitRecheckMs = appId === 'f3' ? 20 : RECHECK_MS;
      apps.push(await createLockApp(cluster.url, { appId, waitRecheckMs, ...options }, 6));
    }
    // Releases that commit synchronously (`asyncRelease: false`): acknowledged only once the standby has them.
    apps.push(await createLockApp(cluster.url, { appId: 'f4', asyncRelease: false, ...options }, 3));
  }, 120_000);
  afterAll(async () => {
    await Promise.all((apps ?? []).map((app) => app.close()));
    await cluster?.destroy();
    watcher.stop();
  });

  const appIdsHeld = async () =>
    (
      await cluster.tryQuery<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${INSTANCES.map((id) => `application_name LIKE 'nestjs-db-locks ${id} %'`).join(' OR ')}`,
      )
    )?.[0]?.n ?? 0;

  it('waits survive it and are woken at once after it; nothing is granted twice, leaked, or reported raw', async () => {
    const [f1, f2, f3, f4] = apps.map((app) => app.locks) as [LockApp['locks'], LockApp['locks'], LockApp['locks'], LockApp['locks']];
    // What a synchronous release costs with a synchronous standby: releases of one lock, one at a time.
    const releaseMs = async (locks: LockApp['locks']) => {
      let total = 0;
      for (let i = 0; i < 20; i++) {
        const stamp = await locks.tryLocks(['COST_WRITE']);
        const from = performance.now();
        await locks.releaseLocks(stamp);
        total += performance.now() - from;
      }
      return total / 20;
    };
    const [asyncReleaseMs, syncReleaseMs] = [await releaseMs(f1), await releaseMs(f4)];
    const releasedSync = await f4.tryLocks(['SYNCREL_WRITE']);
    const releasedAsync = await f1.tryLocks(['ASYNCREL_WRITE']);
    // Six names held by f1, each waited for by a 10 s wait of f2 or f3 started before the kill.
    const names = ['W1', 'W2', 'W3', 'W4', 'W5', 'W6'];
    const held = new Map<string, number>();
    for (const name of names) held.set(name, await f1.tryLocks([`${name}_WRITE`]));
    const sampler = startDbSampler(cluster.url);
    const load = startLoad([f1, f2, f3], { names: ['F1', 'F2', 'F3'], workers: 2, permits: (name) => f1.getLockPermits(name) });
    await until(() => load.report.granted >= 50, 15_000);
    const waiterOf = (i: number) => (i % 2 ? f2 : f3);
    const waits = names.map((name, i) =>
      waiterOf(i)
        .tryLocks([`${name}_WRITE`], { waitMs: 10_000 })
        .then(
          (stamp) => ({ stamp, endedAt: performance.now(), error: undefined as unknown }),
          (error: unknown) => ({ stamp: 0, endedAt: performance.now(), error }),
        ),
    );
    await sleep(300); // the waiters are registered and listening
    const before = Math.max(...(await cluster.tryQuery<{ s: string }>('SELECT max(stamp)::text AS s FROM locking_log'))!.map((r) => Number(r.s)));

    // Two releases acknowledged just before the kill: a synchronous one, then one that commits asynchronously (the
    // default): the standby has the first for sure, the second only if its WAL was flushed and sent in time.
    await f4.releaseLocks(releasedSync);
    await f1.releaseLocks(releasedAsync);
    const killedAt = performance.now();
    await cluster.killPrimary();
    cluster.promoteStandby();
    cluster.switchProxy();
    const switchedAt = performance.now();
    // Time to grant again: a new grant through the proxy.
    let firstGrantMs = 0;
    await until(async () => {
      const stamp = await f2.tryLocks(['PROBE_WRITE']).catch(() => 0);
      if (stamp === 0) return false;
      firstGrantMs = performance.now() - switchedAt;
      expect(stamp).toBeGreaterThan(before); // stamps go on growing across the failover
      await f2.releaseLocks(stamp);
      return true;
    }, 15_000);
    await until(async () => (await appIdsHeld()) === 3, 15_000);
    const appIdsMs = performance.now() - switchedAt;
    expect(await cluster.tryQuery(`SELECT 1 FROM locking WHERE lock_name = 'SYNCREL'`)).toEqual([]);
    const releaseLost = (await cluster.tryQuery(`SELECT 1 FROM locking WHERE lock_name = 'ASYNCREL'`))?.length === 1;
    let lostReleaseMs = 0;
    const lostReleaseFreed = until(async () => {
      const stamp = await f3.tryLocks(['ASYNCREL_WRITE']).catch(() => 0);
      if (stamp === 0) return false;
      lostReleaseMs = performance.now() - killedAt;
      await f3.releaseLocks(stamp);
      return true;
    }, LEASE_MS + 5000);
    // The listening connections reopen by themselves (no new wait starts): a release is heard at once.
    await sleep(1500);
    const releasedAt: number[] = [];
    for (const name of names) {
      await f1.releaseLocks(held.get(name)!);
      releasedAt.push(performance.now());
    }
    const ended = await Promise.all(waits);
    for (const wait of ended) {
      expect(wait.error).toBeUndefined(); // no LockStoreError, whatever the failover did to the attempt in flight
      expect(wait.stamp).toBeGreaterThan(0);
    }
    // f2's waiters re-check every 8 s: ended well before that, they were woken by the release's notification.
    const wokenMs = ended.map((wait, i) => wait.endedAt - releasedAt[i]!).filter((_, i) => waiterOf(i) === f2);
    for (const ms of wokenMs) expect(ms).toBeLessThan(WOKEN_MS);
    const report = await load.stop();
    const sampled = await sampler.stop();
    expect(report.violations).toEqual([]);
    expect(report.untyped).toEqual([]);
    expect(sampled.violations).toEqual([]);
    expect(report.failed).toBeGreaterThan(0); // the failover did hit the load
    expect(watcher.problems).toEqual([]);

    // Twins are refused after it: every app id is held again.
    await expect(createLockApp(cluster.url, { appId: 'f2', ...options })).rejects.toBeInstanceOf(AppIdInUseError);
    for (const [i, wait] of ended.entries()) await waiterOf(i).releaseLocks(wait.stamp);
    // A lost release holds its lock until its lease ends (it is not renewed any more) and a reaper frees it.
    await lostReleaseFreed;
    if (releaseLost) expect(lostReleaseMs).toBeLessThan(LEASE_MS + options.reaperIntervalMs + 2000);
    // Nothing leaked: no lock row, no waiter row, once the leases of grants that nobody knew of have ended.
    await until(async () => {
      const rows = await cluster.tryQuery<{ n: number }>(
        'SELECT (SELECT count(*) FROM locking)::int + (SELECT count(*) FROM locking_waiters)::int AS n',
      );
      return rows?.[0]?.n === 0;
    }, LEASE_MS + 3000);
    process.stdout.write(
      `failover figures: killed→switched ${(switchedAt - killedAt).toFixed(0)} ms, first grant ${firstGrantMs.toFixed(0)} ms ` +
        `and app ids held ${appIdsMs.toFixed(0)} ms after the switch, ` +
        `waiters woken ${wokenMs.map((ms) => ms.toFixed(0)).join('/')} ms after a release following it; ` +
        `a release acknowledged just before the kill was ${releaseLost ? `lost, its lock free ${lostReleaseMs.toFixed(0)} ms after the kill` : 'kept'}; ` +
        `a release took ${asyncReleaseMs.toFixed(1)} ms (asynchronous commit) / ${syncReleaseMs.toFixed(1)} ms (asyncRelease: false)\n`,
    );
  }, 90_000);
});
