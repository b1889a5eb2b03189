import { AppIdInUseError, LockLostError, LockStoreError } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startLoad, watchProcess } from '../support/fault-load.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

const LEASE_MS = 3000;
const RENEW_MS = 250;
const options = { leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS, reaperIntervalMs: 300, waitRecheckMs: 2000 };

/** Every kind of backend the library uses, terminated under load (pg_terminate_backend), one kind at a time and all. */
describe('terminated backends', () => {
  afterEach(stopLeftovers); // a failed test must not leave its load or sampler running
  let db: TestDatabase;
  let apps: LockApp[];
  const watcher = watchProcess();

  /** The pool's connections of each instance are named `pool-<appId>`; the instance sessions name themselves. */
  const BACKENDS = {
    'instance sessions': `application_name LIKE 'nestjs-db-locks t%'`,
    'the listening connections': `query = 'LISTEN nestjs_db_locks'`,
    'pool connections': `application_name LIKE 'pool-t%' AND query <> 'LISTEN nestjs_db_locks'`,
    'all of them at once': `(application_name LIKE 'nestjs-db-locks t%' OR application_name LIKE 'pool-t%')`,
  } as const;

  /** Terminates the backends that match; returns their pids. */
  async function terminate(where: string): Promise<number[]> {
    const rows = await db.query<{ pid: number }>(
      `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND ${where}`,
    );
    return rows.map((row) => row.pid);
  }
  const count = async (where: string) =>
    (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND ${where}`)).length;

  beforeAll(async () => {
    db = await createTestDatabase();
    apps = [];
    for (const appId of ['t1', 't2']) {
      const url = new URL(db.url);
      url.searchParams.set('application_name', `pool-${appId}`);
      apps.push(await createLockApp(url.toString(), { appId, ...options }, 6));
    }
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await db.drop();
    watcher.stop();
  });
  afterEach(() => expect(watcher.problems).toEqual([]));

  it.each(Object.entries(BACKENDS))('%s: grants are kept, waiters served, nothing granted twice', async (kind, where) => {
    const [t1, t2] = apps.map((app) => app.locks) as [LockApp['locks'], LockApp['locks']];
    const suffix = kind.split(' ')[0]!.toUpperCase(); // names of this case only: a failed case leaves no trap
    const kept = await t1.tryLocks([`KEPT_${suffix}_WRITE`]);
    const signal = t1.getSignal(kept);
    // A waiter, so that each instance has its listening connection open.
    const gate = await t1.tryLocks([`GATE_${suffix}_WRITE`]);
    const waiting = t2.tryLocks([`GATE_${suffix}_WRITE`], { waitMs: 20_000 });
    await until(async () => (await count(BACKENDS['the listening connections'])) >= 1);
    const sampler = startDbSampler(db.url);
    const load = startLoad([t1, t2], {
      names: ['B1', 'B2', 'B3'],
      workers: 3,
      longHoldMs: 2.5 * LEASE_MS, // held through the terminations, renewals and reapers
      permits: (name) => t1.getLockPermits(name),
    });
    try {
      await until(() => load.report.granted >= 30);
      const ended = await terminate(where);
      expect(ended.length).toBeGreaterThan(0);
      const terminatedAt = performance.now();
      // Each instance holds its app id again (on a connection that was not ended), within a renewal interval (or at
      // once, at its next tryLocks).
      const alive = ` AND pid <> ALL('{${ended.join(',')}}'::int[])`;
      await until(async () => (await count(BACKENDS['instance sessions'] + alive)) === 2, 5000);
      const reclaimedMs = performance.now() - terminatedAt;
      expect(reclaimedMs).toBeLessThan(RENEW_MS + 2000); // plus connecting on a loaded machine; still less than a lease
      const before = load.report.granted;
      await until(() => load.report.granted >= before + 30, 10_000);
      await t1.releaseLocks(gate);
      // The waiter is served, unless its attempt was in flight on a terminated connection: then it is told that a
      // grant may exist (and nobody renews it).
      const handedOver = await waiting.catch((error: unknown) => {
        expect(error).toBeInstanceOf(LockStoreError);
        expect((error as LockStoreError).outcomeUnknown).toBe(true);
        return 0;
      });
      if (handedOver > 0) await t2.releaseLocks(handedOver);
    } finally {
      const report = await load.stop();
      const sampled = await sampler.stop();
      expect(report.violations).toEqual([]);
      expect(report.untyped).toEqual([]);
      expect(report.lost).toBe(0); // every holder kept its grants
      expect(sampled.violations).toEqual([]);
    }
    expect(signal.aborted).toBe(false);
    expect(t1.isHeld(kept)).toBe(true);
    await t1.releaseLocks(kept);
    await until(async () => (await db.query('SELECT 1 FROM locking')).length === 0, LEASE_MS + 2000);
  });

  it('an instance whose app id a twin took while it was disconnected is fenced and told before the twin gets its locks', async () => {
    // Renewals far apart, so that the twin starts before the instance notices it lost its session. The twin cannot
    // prove the first instance gone (it still runs): its start-up recovery must not free the grants at once.
    const first = await createLockApp(db.url, { appId: 'twin', leaseMs: 3000, renewIntervalMs: 1000, reaperIntervalMs: 0 });
    let twin: LockApp | undefined;
    try {
      const stamp = await first.locks.tryLocks(['TWIN_WRITE']);
      const second = await first.locks.tryLocks(['TWIN2_READ', 'TWIN3_WRITE']);
      const signal = first.locks.getSignal(stamp);
      const secondSignal = first.locks.getSignal(second);
      expect(await terminate(`application_name LIKE 'nestjs-db-locks twin %'`)).toHaveLength(1);
      twin = await createLockApp(db.url, { appId: 'twin', reaperIntervalMs: 50 });
      const twinStarted = performance.now();
      let toldAt = 0;
      signal.addEventListener('abort', () => (toldAt = performance.now()));
      expect(await db.query(`SELECT 1 FROM locking WHERE lock_name = 'TWIN'`)).toHaveLength(1); // not freed at start-up
      // The twin asks for the first instance's locks all along: it gets them only once the first instance was told.
      let taken = 0;
      let toldFirst: boolean | undefined;
      const deadline = performance.now() + 8000;
      while (taken === 0 && performance.now() < deadline) {
        taken = await twin.locks.tryLocks(['TWIN_WRITE', 'TWIN3_WRITE']);
        if (taken > 0) toldFirst = signal.aborted && secondSignal.aborted && !first.locks.isHeld(stamp);
        else await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(taken).toBeGreaterThan(second);
      expect(toldFirst).toBe(true);
      process.stdout.write(
        `fault figures: after a twin started, the fenced holder was told in ${(toldAt - twinStarted).toFixed(0)} ms ` +
          `(renewal every 1000 ms) and the twin granted its locks in ${(performance.now() - twinStarted).toFixed(0)} ms (lease 3000 ms)\n`,
      );
      // Every grant of the fenced instance is reported lost, because of the twin (not later, one by one, by renewals
      // that find them gone).
      expect(signal.reason).toBeInstanceOf(LockLostError);
      expect((signal.reason as LockLostError).reason).toMatch(/another instance took app id "twin"/);
      expect(secondSignal.reason).toBeInstanceOf(LockLostError);
      expect(first.locks.isHeld(second)).toBe(false);
      // And it refuses every later grant, waiting or not, without writing anything.
      await expect(first.locks.tryLocks(['OTHER_WRITE'])).rejects.toThrow(AppIdInUseError);
      await expect(first.locks.tryLocks(['OTHER_WRITE'], { waitMs: 500 })).rejects.toThrow(AppIdInUseError);
      await expect(first.locks.tryLocks(['TWIN_WRITE'])).rejects.toThrow(AppIdInUseError);
      expect(await db.query(`SELECT 1 FROM locking WHERE lock_name = 'OTHER'`)).toEqual([]);
      await twin.locks.releaseLocks(taken);
    } finally {
      await first.close();
      await twin?.close();
    }
  });
});
