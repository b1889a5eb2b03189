import { LockLostError } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startHolder } from '../support/holder-process.js';
import { startLoad, watchProcess } from '../support/fault-load.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { DIALECTS, namesOf } from '../support/dialects.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

const LEASE_MS = 1500;
const RENEW_MS = 250;
const REAPER_MS = 300;
const holderEnv = (url: string, appId: string, locks: string) => ({
  DATABASE_URL: url,
  APP_ID: appId,
  LOCKS: locks,
  LEASE_MS: String(LEASE_MS),
  RENEW_MS: String(RENEW_MS),
});

/** A holder in a process of its own, frozen with SIGSTOP past its lease (a GC pause, a stuck VM, a debugger). */
for (const dialect of DIALECTS) dialect.describe(`a frozen holder (${dialect.name})`, () => {
  afterEach(stopLeftovers); // a failed test must not leave its load or sampler running
  let db: TestDatabase;
  let watcher: LockApp;
  let worker: LockApp;
  const process_ = watchProcess();

  beforeAll(async () => {
    db = await dialect.createDatabase();
    watcher = await createLockApp(db.url, { appId: 'taker', reaperIntervalMs: REAPER_MS, leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS });
    worker = await createLockApp(db.url, { appId: 'worker', reaperIntervalMs: REAPER_MS, leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS });
  });
  afterAll(async () => {
    await watcher.close();
    await worker.close();
    await db.drop();
    process_.stop();
  });
  afterEach(() => expect(process_.problems).toEqual([]));

  it('loses its grant to another instance (under load), and knows it the moment it wakes, before its timers run', async () => {
    const holder = startHolder(holderEnv(db.url, 'sleeper', 'FROZEN_WRITE'));
    const sampler = startDbSampler(db.url);
    const load = startLoad([watcher.locks, worker.locks], {
      names: ['Z1', 'Z2', 'Z3'],
      workers: 2,
      longHoldMs: 3 * LEASE_MS, // held through several renewals, resets and reapers
      permits: (name) => watcher.locks.getLockPermits(name),
    });
    try {
      const { stamp } = await holder.next('held');
      holder.send('check');
      expect(await holder.next('state')).toMatchObject({ held: true });
      holder.child.kill('SIGSTOP');
      let taken = 0;
      await until(async () => (taken = await watcher.locks.tryLocks(['FROZEN_WRITE'])) > 0, LEASE_MS + REAPER_MS + 3000);
      expect(taken).toBeGreaterThan(Number(stamp)); // a larger fencing token
      // Woken: its first question already has the right answer, and its signal fires.
      holder.send('check');
      holder.child.kill('SIGCONT');
      expect(await holder.next('state')).toMatchObject({ held: false });
      expect(await holder.next('signal')).toMatchObject({ reason: 'LockLostError' });
      await watcher.locks.releaseLocks(taken);
    } finally {
      holder.child.kill('SIGCONT');
      await holder.kill();
      const report = await load.stop();
      const sampled = await sampler.stop();
      expect(report.violations).toEqual([]);
      expect(report.untyped).toEqual([]);
      expect(report.granted).toBeGreaterThan(20);
      expect(sampled.violations).toEqual([]);
    }
    const log = await db.query<{ status: string; lock_names: unknown }>('SELECT status, lock_names FROM locking_log ORDER BY stamp');
    expect(log.filter((row) => namesOf(row.lock_names).join() === 'FROZEN').map((row) => row.status)).toEqual([
      'REAPED',
      'RELEASED',
    ]);
    // The killed holder's own rows (none left) and the load's are drained.
    await until(async () => (await db.query('SELECT 1 FROM locking')).length === 0, LEASE_MS + REAPER_MS + 2000);
  });
});

/** The same, with no reaper running anywhere: the expired lease stays in the table until one runs. */
describe('a frozen holder woken after its lease, before any reaper ran', () => {
  let db: TestDatabase;
  let idle: LockApp;
  const process_ = watchProcess();

  beforeAll(async () => {
    db = await createTestDatabase();
    idle = await createLockApp(db.url, { appId: 'idle', reaperIntervalMs: 0 });
  });
  afterAll(async () => {
    await idle.close();
    await db.drop();
    process_.stop();
  });

  const logOf = async (stamp: unknown) =>
    (
      await db.query<{ status: string; version: number; end: string; expired: boolean }>(
        `SELECT status, version, lease_expires::text AS end, lease_expires < now() AS expired FROM locking_log WHERE stamp = $1`,
        [stamp],
      )
    )[0];

  it('is told it lost the grant, and its renewal never revives the lease that ended in the database', async () => {
    const holder = startHolder(holderEnv(db.url, 'sleeper2', 'NAP_WRITE'));
    try {
      const { stamp } = await holder.next('held');
      // Its answer to a check shows it watches its signal (it subscribes right after it reports `held`).
      holder.send('check');
      expect(await holder.next('state')).toMatchObject({ held: true });
      holder.child.kill('SIGSTOP');
      await sleep(RENEW_MS); // a renewal sent just before the freeze has committed by now
      const frozen = await logOf(stamp);
      await until(async () => (await logOf(stamp))!.expired, LEASE_MS + 1000);
      holder.send('check');
      holder.child.kill('SIGCONT');
      expect(await holder.next('state')).toMatchObject({ held: false });
      expect(await holder.next('signal')).toMatchObject({ reason: LockLostError.name });
      // Several renewal ticks of the woken holder: the ended lease is not extended, its row stays as it was.
      await sleep(3 * RENEW_MS);
      expect(await logOf(stamp)).toEqual({ ...frozen!, expired: true });
      // The next reaper frees it, and the name can be taken again.
      expect(await idle.locks.reapStaleLocks()).toBe(1);
      const taken = await idle.locks.tryLocks(['NAP_WRITE']);
      expect(taken).toBeGreaterThan(Number(stamp));
      await idle.locks.releaseLocks(taken);
    } finally {
      holder.child.kill('SIGCONT');
      await holder.kill();
    }
    expect(await db.query('SELECT 1 FROM locking')).toEqual([]);
    expect(process_.problems).toEqual([]);
  });
});
