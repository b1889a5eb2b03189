import { AppIdInUseError, LeaderService } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { mostLeadersAtOnce, standInOrder } from '../support/leader-fleet.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startLoad, watchProcess } from '../support/fault-load.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { stopLeftovers } from '../support/leftovers.js';
import { debianPostgresBin, startStandbyCluster, type StandbyCluster } from '../support/standby-cluster.js';
import { until } from '../support/until.js';

const LEASE_MS = 8000;
// Longer than the whole test, so that a waiter woken at once is told apart from one found by its timer, and so that
// no waiter's periodic refresh opens the listening connection again (the notifications must do it by themselves).
const RECHECK_MS = 60_000;
const options = {
  leaseMs: LEASE_MS,
  renewIntervalMs: 250,
  reaperIntervalMs: 300,
  queryTimeoutMs: 1000,
  waitRecheckMs: RECHECK_MS,
};
const INSTANCES = ['f1', 'f2', 'f3'];
/** A leader role that f1, f2 and f3 stand for through the failover. */
const ROLE = 'failover-role';
/** A role that r1 and r2 stand for with a lease shorter than the failover: its leader is told, another is elected after it. */
const SHORT_ROLE = 'short-lease-role';
const SHORT_LEASE_MS = 1500;
const SHORT = ['r1', 'r2'];
/** The time an operator or Patroni takes to decide: longer than SHORT_LEASE_MS. */
const DECISION_MS = 2000;
/** The application_name of r1's and r2's pooled connections (their LISTEN among them). */
const SHORT_NAME = 'short-lease';
const WAITERS = 8;
/** Waiters of a fourth instance that re-checks every 10 ms: some of their attempts are in flight when the primary dies. */
const BUSY_WAITERS = 12;

const bin = debianPostgresBin();
if (!bin && process.env.REQUIRE_STANDBY === '1') throw new Error('REQUIRE_STANDBY=1 but no Debian PostgreSQL with pg_basebackup');
const describeWithStandby = bin ? describe : describe.skip;

/**
 * A failover to a synchronous standby under load, as Patroni or a cloud does it: the primary is killed, the standby
 * promoted, the clients' address (a proxy here) switched. Three instances of a service, waits in flight across it.
 */
describeWithStandby('a failover to a synchronous standby (PostgreSQL)', () => {
  afterEach(stopLeftovers);
  let cluster: StandbyCluster;
  let apps: LockApp[];
  let busy: LockApp;
  let short: LockApp[];
  const watcher = watchProcess();

  beforeAll(async () => {
    cluster = await startStandbyCluster(bin!);
    apps = [];
    for (const appId of INSTANCES) apps.push(await createLockApp(cluster.url, { appId, ...options }, 6));
    busy = await createLockApp(cluster.url, { appId: 'f4', ...options, waitRecheckMs: 10 }, 6);
    short = [];
    const shortUrl = new URL(cluster.url);
    shortUrl.searchParams.set('application_name', SHORT_NAME);
    for (const appId of SHORT) {
      short.push(await createLockApp(shortUrl.toString(), { appId, ...options, leaseMs: SHORT_LEASE_MS, queryTimeoutMs: 500 }, 4));
    }
  }, 120_000);
  afterAll(async () => {
    await Promise.all([...(apps ?? []), ...(busy ? [busy] : []), ...(short ?? [])].map((app) => app.close()));
    await cluster?.destroy();
    watcher.stop();
  });

  const query = <R>(text: string) => cluster.tryQuery<R>(text);
  const appIdsHeld = async () =>
    Number(
      (
        await query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${INSTANCES.map((id) => `application_name LIKE 'nestjs-db-locks ${id} %'`).join(' OR ')}`,
        )
      )?.[0]?.n ?? 0,
    );
  /** Connections of f1-f4 that listen for freed locks (their last statement was the LISTEN; r1's and r2's are named). */
  const listening = async () =>
    Number(
      (
        await query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND application_name <> '${SHORT_NAME}'`,
        )
      )?.[0]?.n ?? 0,
    );

  it('waits go on through it and are woken at once after it; grants are kept, never doubled, and twins refused', async () => {
    const [f1, f2, f3] = apps.map((app) => app.locks) as [LockApp['locks'], LockApp['locks'], LockApp['locks']];
    // f1 holds the names that the waiters of f2 and f3 wait for, through the failover.
    const held: number[] = [];
    for (let i = 0; i < WAITERS; i++) held.push(await f1.tryLocks([`HELD${i}_WRITE`]));
    const signals = held.map((stamp) => f1.getSignal(stamp));
    const outcomes: Array<{ stamp?: number; error?: unknown; at?: number }> = [];
    const waits = Array.from({ length: WAITERS }, (_, i) => {
      const outcome: { stamp?: number; error?: unknown; at?: number } = {};
      outcomes.push(outcome);
      return (i % 2 ? f2 : f3).tryLocks([`HELD${i}_WRITE`], { waitMs: 30_000 }).then(
        (stamp) => Object.assign(outcome, { stamp, at: performance.now() }),
        (error: unknown) => Object.assign(outcome, { error, at: performance.now() }),
      );
    });
    // The busy waiters: their answers lost with the primary must not end their waits either.
    const busyHeld: number[] = [];
    for (let i = 0; i < BUSY_WAITERS; i++) busyHeld.push(await f1.tryLocks([`BUSY${i}_WRITE`]));
    const busyWaits = busyHeld.map((_, i) =>
      busy.locks.tryLocks([`BUSY${i}_WRITE`], { waitMs: 30_000 }).then((stamp) => ({ stamp }), (error: unknown) => ({ stamp: 0, error })),
    );
    await until(
      async () =>
        Number((await query<{ n: number }>('SELECT count(*)::int AS n FROM locking_waiters'))?.[0]?.n) === WAITERS + BUSY_WAITERS,
    );
    await until(async () => (await listening()) === 3); // f2, f3 and f4 listen for the names they wait for
    // A leader role across the fleet: f1, f2, f3 stand for it; what each replica is told is recorded in order.
    const leaders = apps.map((app) => app.app.get(LeaderService));
    const { told } = await standInOrder(leaders, ROLE);
    const termBefore = leaders[0]!.term(ROLE)!.token;
    // The short-lease role: r1 leads, r2 waits.
    const shortLeaders = short.map((app) => app.app.get(LeaderService));
    const { told: shortTold } = await standInOrder(shortLeaders, SHORT_ROLE);
    const shortTermBefore = shortLeaders[0]!.term(SHORT_ROLE)!.token;
    const stampsBefore = Number((await query<{ s: string }>('SELECT max(stamp) AS s FROM locking_log'))![0]!.s);

    const sampler = startDbSampler(cluster.url);
    const load = startLoad([f1, f2, f3], { names: ['L1', 'L2', 'L3'], workers: 3, permits: (name) => f1.getLockPermits(name) });
    await until(() => load.report.granted >= 30);

    // A release acknowledged just before the kill (releases commit asynchronously by default).
    const lastRelease = await f2.tryLocks(['LAST_RELEASE_WRITE']);
    await f2.releaseLocks(lastRelease);
    await cluster.killPrimary();
    const killedAt = performance.now();
    await sleep(DECISION_MS); // the time an operator or Patroni takes to decide
    await cluster.promoteStandby();
    const promotedAt = performance.now();

    // The short-lease leader was told before the new primary took writes; a leader is elected after the promotion,
    // with the next token (the term written before the kill was on the synchronous standby).
    await until(() => shortTold.some((change) => change.leading && change.token > shortTermBefore), 10_000);
    const shortToldAt = shortTold.find((change) => !change.leading && change.token === shortTermBefore)?.t;
    const shortElected = shortTold.find((change) => change.leading && change.token > shortTermBefore)!;
    expect(shortToldAt).toBeLessThan(promotedAt);
    expect(shortElected.token).toBe(shortTermBefore + 1);
    const shortElectedMs = shortElected.t - promotedAt;
    expect(mostLeadersAtOnce(shortTold)).toBe(1);

    await until(async () => (await appIdsHeld()) === 3, 15_000);
    const appIdsMs = performance.now() - promotedAt;
    // The listening connections come back by themselves (back-off up to 2 s), not only when a wait asks again.
    await until(async () => (await listening()) === 3, 5000);
    const listeningMs = performance.now() - promotedAt;
    // No wait ended during the failover: each failure granted nothing (known, or found out by looking).
    expect(outcomes.filter((o) => o.at !== undefined)).toEqual([]);

    // The leader kept its term through the failover (shorter than its lease); it resigns on the new primary, and the
    // next candidate is elected with a larger token: the term written before the kill was on the standby.
    expect(leaders[0]!.term(ROLE)?.token).toBe(termBefore);
    const seen = told.length;
    const resignedAt = performance.now();
    await leaders[0]!.resign(ROLE);
    await until(() => told.slice(seen).some((change) => change.leading), 5000);
    const elected = told.slice(seen).find((change) => change.leading)!;
    const electedMs = elected.t - resignedAt;
    const electedAfterPromotionMs = elected.t - promotedAt;
    expect(elected.token).toBe(termBefore + 1);
    expect(electedMs).toBeLessThan(2000); // woken by the notification, not by the re-check (60 s)
    expect(mostLeadersAtOnce(told)).toBe(1);

    // The holder kept its grants (the failover was shorter than the lease) and releases them now.
    expect(signals.map((s) => s.aborted)).toEqual(held.map(() => false));
    const releasedAt: number[] = [];
    for (const stamp of held) {
      await until(async () => f1.releaseLocks(stamp).then(() => true, () => false), 5000);
      releasedAt.push(performance.now());
    }
    await Promise.all(waits);
    for (const stamp of busyHeld) await f1.releaseLocks(stamp);
    const busyOutcomes = await Promise.all(busyWaits);
    expect(busyOutcomes.filter((o) => 'error' in o)).toEqual([]);
    await Promise.all(busyOutcomes.map((o) => busy.locks.releaseLocks(o.stamp)));
    const wakeMs = outcomes.map((o, i) => o.at! - releasedAt[i]!);
    for (const outcome of outcomes) {
      expect(outcome.error).toBeUndefined();
      expect(outcome.stamp).toBeGreaterThan(stampsBefore); // stamps stay monotonic across the failover
    }
    // Woken by the release's notification, far sooner than the re-check timer.
    expect(Math.max(...wakeMs)).toBeLessThan(2000);

    // Twins are refused on the new primary.
    await expect(createLockApp(cluster.url, { appId: 'f1', ...options })).rejects.toThrow(AppIdInUseError);

    // The release acknowledged before the kill may be lost: the lock then stays until its lease ends, never longer.
    const lostRelease = ((await query(`SELECT 1 FROM locking WHERE lock_name = 'LAST_RELEASE'`)) ?? []).length > 0;
    let lastFreeMs = 0;
    await until(async () => {
      const stamp = await f3.tryLocks(['LAST_RELEASE_WRITE']).catch(() => 0);
      if (stamp === 0) return false;
      lastFreeMs = performance.now() - killedAt;
      await f3.releaseLocks(stamp);
      return true;
    }, LEASE_MS + 5000);
    if (lostRelease) expect(lastFreeMs).toBeLessThan(LEASE_MS + 2000);

    const grantedBefore = load.report.granted;
    await until(() => load.report.granted > grantedBefore + 20, 10_000);
    const report = await load.stop();
    const sampled = await sampler.stop();
    for (const wait of outcomes) expect(wait.stamp).toBeGreaterThan(0);
    await Promise.all(outcomes.map((o, i) => (i % 2 ? f2 : f3).releaseLocks(o.stamp!)));
    expect(report.violations).toEqual([]);
    expect(report.untyped).toEqual([]);
    expect(report.lost).toBe(0);
    expect(sampled.violations).toEqual([]);
    expect(watcher.problems).toEqual([]);
    process.stdout.write(
      `failover figures: app ids held again ${appIdsMs.toFixed(0)} ms after promotion; listening again ` +
        `${listeningMs.toFixed(0)} ms after it; ${WAITERS} waits granted ${Math.min(...wakeMs).toFixed(0)}–` +
        `${Math.max(...wakeMs).toFixed(0)} ms after their release; the release just before the kill was ` +
        `${lostRelease ? `lost, the lock free again ${lastFreeMs.toFixed(0)} ms after the kill` : 'kept'}; the leader kept ` +
        `term ${termBefore} through it, and on its resign term ${elected.token} was elected ${electedMs.toFixed(0)} ms later ` +
        `(${electedAfterPromotionMs.toFixed(0)} ms after the promotion); the short-lease leader (lease ${SHORT_LEASE_MS} ms) ` +
        `was told ${(shortToldAt! - killedAt).toFixed(0)} ms after the kill, and term ${shortElected.token} ` +
        `was elected ${shortElectedMs.toFixed(0)} ms after the promotion\n`,
    );
    for (const service of leaders) await service.resign(ROLE);
    for (const service of shortLeaders) await service.resign(SHORT_ROLE);
    await until(async () => Number((await query<{ n: number }>('SELECT count(*)::int AS n FROM locking'))?.[0]?.n) === 0, LEASE_MS + 3000);
  }, 90_000);
});
