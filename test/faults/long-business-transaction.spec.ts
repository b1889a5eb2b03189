import { InvalidLockArgumentError, LockError, LockLostError, LockStoreError } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { startLoad, watchProcess } from '../support/fault-load.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { deadlockEvidence, expireLeases, msUntil } from '../support/dialect-sql.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

const LEASE_MS = 1500;
const RENEW_MS = 200;
const REAPER_MS = 300;
const options = { leaseMs: LEASE_MS, renewIntervalMs: RENEW_MS, queryTimeoutMs: 1000 };

/**
 * A business transaction that runs long after `markBusinessDone` holds its grant's log row: the renewal of the same
 * instance's other grants must skip that row, never wait for it; release and reaper never deadlock; and
 * `markBusinessDone` refuses a manager that is not in a transaction.
 */
for (const dialect of DIALECTS) dialect.describe(`a long business transaction on ${dialect.name}`, () => {
  const mysql = dialect.name === 'MariaDB';
  afterEach(stopLeftovers); // a failed test must not leave its load or sampler running
  let db: TestDatabase;
  let biz: LockApp;
  let other: LockApp;
  const watcher = watchProcess();

  beforeAll(async () => {
    db = await dialect.createDatabase();
    // A deadlock would stall its statements for this long before the server breaks it (the race test bounds below).
    // InnoDB breaks one at once and the MySQL store retries its victim: the race test asks the server instead.
    if (!mysql) {
      const [{ name }] = await db.query<{ name: string }>('SELECT current_database() AS name');
      await db.query(`ALTER DATABASE ${name} SET deadlock_timeout = '10s'`);
    }
    const named = (name: string) => {
      if (mysql) return db.url;
      const url = new URL(db.url);
      url.searchParams.set('application_name', name);
      return url.toString();
    };
    // The instance with the business transaction runs no reaper; the other one does.
    biz = await createLockApp(named('pool-biz'), { appId: 'biz', ...options, reaperIntervalMs: 0 }, 8);
    other = await createLockApp(named('pool-other'), { appId: 'other', ...options, reaperIntervalMs: REAPER_MS }, 6);
  });
  afterAll(async () => {
    await biz?.close();
    await other?.close();
    await db?.drop();
    watcher.stop();
  });
  afterEach(() => expect(watcher.problems).toEqual([]));

  const logOf = async (stamp: number) => {
    const [row] = await db.query<{ status: string; version: number | string; lease_ms: number | string }>(
      `SELECT status, version, ${msUntil(dialect, 'lease_expires')} AS lease_ms FROM locking_log WHERE stamp = $1`,
      [stamp],
    );
    return row && { status: row.status, version: Number(row.version), lease_ms: Number(row.lease_ms) };
  };
  const rowCount = async (names = '%') =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM locking WHERE lock_name LIKE $1', [names]))[0]!.n);

  it("does not stop the renewal of the instance's other grants (held past three leases, under load)", async () => {
    const keepWrite = await biz.locks.tryLocks(['KEEP1_WRITE']);
    const keepRead = await biz.locks.tryLocks(['KEEP2_READ']);
    const inTx = await biz.locks.tryLocks(['TX_WRITE']);
    expect([keepWrite, keepRead, inTx].every((stamp) => stamp > 0)).toBe(true);
    const keptSignals = [biz.locks.getSignal(keepWrite), biz.locks.getSignal(keepRead)];
    let txLostAt = 0;
    const txSignal = biz.locks.getSignal(inTx);
    txSignal.addEventListener('abort', () => (txLostAt = performance.now()));

    const sampler = startDbSampler(db.url);
    const load = startLoad([biz.locks, other.locks], {
      names: ['L1', 'L2', 'L3'],
      workers: 3,
      permits: (name) => other.locks.getLockPermits(name),
    });
    const runner = biz.app.get(DataSource).createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await runner.query('SELECT 1');
      await biz.locks.markBusinessDone(inTx, runner.manager);
      const markedAt = performance.now();
      const versionAtMark = (await logOf(keepWrite))!.version;

      // Three leases pass with the business transaction open.
      await until(() => performance.now() - markedAt >= 3 * LEASE_MS, 3 * LEASE_MS + 2000);
      const kept = await logOf(keepWrite);
      // Renewed all along (about one renewal per interval), not merely still alive.
      expect(kept!.version - versionAtMark).toBeGreaterThanOrEqual((3 * LEASE_MS) / RENEW_MS / 2);
      expect(kept!.lease_ms).toBeGreaterThan(0);
      expect(keptSignals.map((signal) => signal.aborted)).toEqual([false, false]);
      expect(biz.locks.isHeld(keepWrite)).toBe(true);
      expect(biz.locks.isHeld(keepRead)).toBe(true);
      expect(await other.locks.tryLocks(['KEEP1_READ'])).toBe(0);
      expect(await other.locks.tryLocks(['KEEP2_WRITE'])).toBe(0);

      // The grant inside the transaction could not be renewed: its holder was told by its lease end, on its clock...
      expect(txSignal.aborted).toBe(true);
      expect(txSignal.reason).toBeInstanceOf(LockLostError);
      expect(txLostAt - markedAt).toBeLessThanOrEqual(LEASE_MS + 750); // plus the lateness of a timer in a busy process
      expect(biz.locks.isHeld(inTx)).toBe(false);
      // ... while no reaper can free it as long as the transaction holds its row, and a reaper does not wait for it.
      const reapStarted = performance.now();
      await other.locks.reapStaleLocks();
      expect(performance.now() - reapStarted).toBeLessThan(3000); // one that waited would wait for the commit below
      expect(await other.locks.tryLocks(['TX_WRITE'])).toBe(0);
    } finally {
      await runner.commitTransaction();
      await runner.release();
      const report = await load.stop();
      const sampled = await sampler.stop();
      expect(report.violations).toEqual([]);
      expect(report.untyped).toEqual([]);
      expect(report.lost).toBe(0);
      expect(report.granted).toBeGreaterThan(50);
      expect(sampled.violations).toEqual([]);
      expect(sampled.samples).toBeGreaterThan(100);
    }
    // Once the transaction ended, the expired grant is reaped (or released by its holder) and everything drains.
    await biz.locks.releaseLocks(inTx).catch((error: unknown) => expect(error).toBeInstanceOf(LockError));
    await biz.locks.releaseLocks(keepWrite);
    await biz.locks.releaseLocks(keepRead);
    await until(async () => (await rowCount()) === 0, LEASE_MS + REAPER_MS + 2000);
    expect((await logOf(inTx))?.status).toMatch(/^(RELEASED|REAPED)$/);
  });

  it('release and reaper racing over the same expired grants never deadlock', async () => {
    await biz.locks.setLockPermits('DC', 'read', 1000);
    // A slow delete on `locking` (5 ms after each DELETE statement; 2 ms after each row on MySQL, whose triggers are
    // per row) widens the moment between a release's two statements, where taking the rows in two different orders
    // deadlocks.
    if (mysql) {
      await db.query(`CREATE TRIGGER ndl_test_slow_delete AFTER DELETE ON locking FOR EACH ROW DO SLEEP(0.002)`);
    } else {
      await db.query(`CREATE FUNCTION ndl_test_slow_delete() RETURNS trigger LANGUAGE plpgsql
        AS $$ BEGIN PERFORM pg_sleep(0.005); RETURN NULL; END $$`);
      await db.query(`CREATE TRIGGER ndl_test_slow_delete AFTER DELETE ON locking
        FOR EACH STATEMENT EXECUTE FUNCTION ndl_test_slow_delete()`);
    }
    const deadlocksBefore = await deadlockEvidence(db, dialect);
    const timed = async (fn: () => Promise<unknown>) => {
      const started = performance.now();
      const error = await fn().then(
        () => undefined,
        (e: unknown) => e,
      );
      return { ms: performance.now() - started, error };
    };
    const results: Array<{ ms: number; error: unknown }> = [];
    const stamps: number[] = [];
    try {
      for (let round = 0; round < 4; round++) {
        const batch: number[] = [];
        for (let i = 0; i < 20; i++) batch.push(await biz.locks.tryLocks([`DA${round}_${i}_WRITE`, `DB${i}_READ`, 'DC_READ']));
        expect(batch.every((stamp) => stamp > 0)).toBe(true);
        stamps.push(...batch);
        // Their leases end in the database (as after a long pause of the holder): any reaper may now free them.
        for (const stamp of batch) await expireLeases(db, dialect, stamp);
        let releasing = true;
        const reapers = [other, other, biz].map(async (app) => {
          while (releasing) results.push(await timed(() => app.locks.reapStaleLocks()));
        });
        results.push(...(await Promise.all(batch.map((stamp) => timed(() => biz.locks.releaseLocks(stamp))))));
        releasing = false;
        await Promise.all(reapers);
        const errors = results.map((r) => r.error).filter((error) => error !== undefined);
        // A release that lost the race to a reaper is told so (IllegalMonitorStateError); nothing else: no deadlock
        // (40P01, 1213), no store error, no raw driver error.
        expect(errors.filter((error) => !(error instanceof LockError))).toEqual([]);
        expect(errors.filter((error) => error instanceof LockStoreError).map((error) => (error as LockStoreError).code)).toEqual([]);
        // PostgreSQL breaks a deadlock only after deadlock_timeout (10 s here): every call answered well before that.
        expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(5000);
        // And the server saw none (InnoDB breaks one at once, and the store would have retried its victim quietly).
        expect(await deadlockEvidence(db, dialect)).toEqual(deadlocksBefore);
        // Every grant of the round ended before the next one starts (else it could not take the same names).
        expect(await rowCount('D%')).toBe(0);
      }
    } finally {
      await db.query(`DROP TRIGGER ndl_test_slow_delete${mysql ? '' : ' ON locking'}`);
      if (!mysql) await db.query('DROP FUNCTION ndl_test_slow_delete()');
    }
    const statuses = await db.query<{ status: string }>(
      `SELECT status FROM locking_log WHERE stamp IN (${stamps.map((_, i) => `$${i + 1}`).join(', ')})`,
      stamps,
    );
    expect(statuses).toHaveLength(stamps.length);
    expect(statuses.every(({ status }) => status === 'RELEASED' || status === 'REAPED')).toBe(true);
    expect(await rowCount('D%')).toBe(0);
  });

  it('markBusinessDone refuses an EntityManager outside a transaction and writes nothing', async () => {
    const stamp = await biz.locks.tryLocks(['NOTX_WRITE']);
    const dataSource = biz.app.get(DataSource);
    const before = await logOf(stamp);
    await expect(biz.locks.markBusinessDone(stamp, dataSource.manager)).rejects.toThrow(InvalidLockArgumentError);
    // A query runner whose transaction already ended is no better.
    const runner = dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    await runner.commitTransaction();
    await expect(biz.locks.markBusinessDone(stamp, runner.manager)).rejects.toThrow(InvalidLockArgumentError);
    await runner.release();
    const after = await logOf(stamp);
    expect(after!.status).toBe('ACQUIRED');
    // Only renewals moved the version: the lease still ends in the future and nothing became BUSINESS_DONE.
    expect(after!.version).toBeGreaterThanOrEqual(before!.version);
    expect(
      await db.query(`SELECT 1 FROM locking_log WHERE stamp = $1 AND business_done IS NOT NULL`, [stamp]),
    ).toEqual([]);
    expect(biz.locks.isHeld(stamp)).toBe(true);
    await biz.locks.releaseLocks(stamp);
    expect(await rowCount('NOTX')).toBe(0);
  });
});
