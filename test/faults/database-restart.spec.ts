import { LockStoreError } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startLoad, watchProcess } from '../support/fault-load.js';
import type { RestartableServer } from '../support/restartable-server.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

// The outage of the first test must stay shorter than the lease on a loaded machine, where stopping and starting the
// server take seconds (the last renewal before the stop can be a whole stop earlier): a long lease, short intervals.
const LEASE_MS = 8000;
const RENEW_MS = 250;
const REAPER_MS = 300;
const options = { leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS, reaperIntervalMs: REAPER_MS, queryTimeoutMs: 1000 };
const INSTANCES = ['r1', 'r2', 'r3'];

/** The database stopped and started again under load, with three instances of a service (a server of the test's own). */
for (const dialect of DIALECTS) dialect.describeRestartable(`a database restart on ${dialect.name}`, () => {
  afterEach(stopLeftovers); // a failed test must not leave its load or sampler running
  let server: RestartableServer;
  let apps: LockApp[];
  const watcher = watchProcess();

  const query = <R>(text: string) => server.tryQuery<R>(text);
  const lockRowCount = async () => Number((await query<{ n: string }>('SELECT count(*) AS n FROM locking'))?.[0]?.n);

  beforeAll(async () => {
    server = await dialect.startRestartable();
    apps = [];
    for (const appId of INSTANCES) apps.push(await createLockApp(server.url, { appId, ...options }, 6));
    await apps[0]!.locks.setLockPermits('F1', 'read', 3);
  }, 120_000);
  afterAll(async () => {
    await server?.start();
    await Promise.all((apps ?? []).map((app) => app.close()));
    await server?.destroy();
    watcher.stop();
  });
  afterEach(() => expect(watcher.problems).toEqual([]));

  const startWorkers = () =>
    startLoad(
      apps.map((app) => app.locks),
      {
        names: ['F1', 'F2', 'F3'],
        workers: 3,
        permits: (name) => apps[0]!.locks.getLockPermits(name),
        longHoldMs: 2.5 * LEASE_MS, // held through the outage, renewals and reapers
      },
    );

  it('shorter than the lease: holders keep their grants, every instance resumes, nothing is granted twice', async () => {
    const [r1, r2, r3] = apps.map((app) => app.locks) as [LockApp['locks'], LockApp['locks'], LockApp['locks']];
    const kept = await r1.tryLocks(['KEEP_WRITE']);
    const keptRead = await r3.tryLocks(['KEEPR_READ']);
    const signals = [r1.getSignal(kept), r3.getSignal(keptRead)];
    const unreleased = await r2.tryLocks(['UNRELEASED_WRITE']);
    const sampler = startDbSampler(server.url);
    const load = startWorkers();
    await until(() => load.report.granted >= 50);

    await server.stop();
    const stoppedAt = performance.now();
    await sleep(2 * RENEW_MS);
    // While the database is away: an acquisition cannot even connect (known outcome: nothing granted)...
    const refused = await r1.tryLocks(['REFUSED_WRITE']).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockStoreError);
    expect((refused as LockStoreError).outcomeUnknown).toBe(false);
    // ... and a release fails: the grant is not renewed any more, and released again once the database is back.
    const failedRelease = await r2.releaseLocks(unreleased).catch((e: unknown) => e);
    expect(failedRelease).toBeInstanceOf(LockStoreError);
    expect(r2.isHeld(unreleased)).toBe(false);
    await until(() => performance.now() - stoppedAt >= 4 * RENEW_MS + 200); // longer than a renewal interval
    await server.start();
    const startedAt = performance.now();
    await until(async () => (await server.appIdsHeld(INSTANCES)) === 3, 15_000);
    const resumedMs = performance.now() - startedAt;
    const grantedBefore = load.report.granted;
    await until(() => load.report.granted > grantedBefore + 20, 10_000);
    // The failed release went through in the background, and the grant was never renewed after it failed.
    await until(async () => (await query(`SELECT 1 FROM locking WHERE lock_name = 'UNRELEASED'`))?.length === 0, 5000);
    const [after] = (await query<{ status: string }>(`SELECT status FROM locking_log WHERE stamp = ${unreleased}`))!;
    expect(after?.status).toBe('RELEASED');
    // (A renewal after the restart would have moved the lease end to at least a lease past the server's start.)
    expect(await server.renewedSinceStart(unreleased, LEASE_MS)).toBe(false);

    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
    expect(r1.isHeld(kept)).toBe(true);
    expect(r3.isHeld(keptRead)).toBe(true);
    expect(await r2.tryLocks(['KEEP_WRITE'])).toBe(0);
    expect(await r2.tryLocks(['KEEPR_WRITE'])).toBe(0);
    const report = await load.stop();
    const sampled = await sampler.stop();
    expect(report.violations).toEqual([]);
    expect(report.untyped).toEqual([]);
    expect(report.failed).toBeGreaterThan(0); // the outage did hit the load
    expect(report.lost).toBe(0); // no holder was told it lost a grant: none did
    expect(sampled.violations).toEqual([]);
    expect(sampled.failedSamples).toBeGreaterThan(0);
    // One renewal interval, plus connecting on a loaded machine: far less than the lease that an instance which did not
    // take its app id back by itself would need to have its grants freed.
    expect(resumedMs).toBeLessThan(RENEW_MS + 2000);
    process.stdout.write(`fault figures (${dialect.name}): instances held their app ids again ${resumedMs.toFixed(0)} ms after the restart\n`);
    await r1.releaseLocks(kept);
    await r3.releaseLocks(keptRead);
    await until(async () => (await lockRowCount()) === 0, LEASE_MS + REAPER_MS + 2000);
  });

  it('longer than the lease: each holder is told by its lease end, and the locks are freed once it is back', async () => {
    const [r1, r2] = apps.map((app) => app.locks) as [LockApp['locks'], LockApp['locks']];
    const lost = await r1.tryLocks(['LOST_WRITE']);
    let abortedAt = 0;
    r1.getSignal(lost).addEventListener('abort', () => (abortedAt = performance.now()));
    const sampler = startDbSampler(server.url);
    const load = startWorkers();
    await until(() => load.report.granted >= 50);

    const stopping = performance.now();
    await server.stop();
    const stoppedAt = performance.now();
    await sleep(LEASE_MS + 1000);
    const restartedAt = performance.now();
    // Told while the database was still away: no later than a lease after its last successful renewal was sent
    // (before the server had stopped; plus the lateness of a timer in this busy process), and not much earlier than
    // that (the last renewal was sent at most one interval, and a late tick, before the stop began).
    expect(abortedAt).toBeGreaterThan(0);
    expect(abortedAt - stoppedAt).toBeLessThanOrEqual(LEASE_MS + 750);
    expect(abortedAt - stopping).toBeGreaterThanOrEqual(LEASE_MS - RENEW_MS - 1000);
    expect(r1.isHeld(lost)).toBe(false);
    await server.start();

    // The lease ended in the database too: a reaper frees it and another instance takes it.
    let freedMs = 0;
    await until(async () => {
      const stamp = await r2.tryLocks(['LOST_WRITE']).catch(() => 0);
      if (stamp === 0) return false;
      freedMs = performance.now() - restartedAt;
      await r2.releaseLocks(stamp);
      return true;
    }, 15_000);
    // Every instance holds its app id again and grants again.
    await until(async () => (await server.appIdsHeld(INSTANCES)) === 3, 15_000);
    const grantedBefore = load.report.granted;
    await until(() => load.report.granted > grantedBefore + 20, 10_000);
    const report = await load.stop();
    const sampled = await sampler.stop();
    expect(report.violations).toEqual([]);
    expect(report.untyped).toEqual([]);
    expect(sampled.violations).toEqual([]);
    expect(sampled.failedSamples).toBeGreaterThan(0);
    process.stdout.write(`fault figures (${dialect.name}): a lock lost in a ${LEASE_MS + 1000} ms outage was free ${freedMs.toFixed(0)} ms after the restart\n`);
    await until(async () => (await lockRowCount()) === 0, LEASE_MS + REAPER_MS + 3000);
  });

  it('app.close() during an outage and after one returns within a few seconds and throws nothing', async () => {
    const extra = await createLockApp(server.url, { appId: 'r4', ...options }, 6);
    const survivor = await createLockApp(server.url, { appId: 'x5', ...options }, 6);
    const stamp = await extra.locks.tryLocks(['CLOSING_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    expect(await survivor.locks.tryLocks(['SURVIVING_WRITE'])).toBeGreaterThan(0);
    await server.stop();
    const started = performance.now();
    await expect(extra.close()).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(5000);
    await server.start();
    await until(async () => (await server.appIdsHeld(INSTANCES)) === 3, 15_000);
    // The survivor went through the outage; it takes its app id back, then closes cleanly.
    await until(async () => (await server.appIdsHeld(['x5'])) === 1, 5000);
    const closing = performance.now();
    await expect(survivor.close()).resolves.toBeUndefined();
    expect(performance.now() - closing).toBeLessThan(3000);
    // The closed instances' grants are freed (by the release at close, or one lease later by a reaper).
    await until(async () => (await lockRowCount()) === 0, LEASE_MS + REAPER_MS + 2000);
  });
});
