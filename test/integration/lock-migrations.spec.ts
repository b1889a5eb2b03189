import { DataSource } from 'typeorm';
import { LOCK_ENTITIES, LOCK_MIGRATIONS, LockAdminService, LockTablesMissingError } from 'nestjs-db-locks';
import { createJobRunStore } from '../../lib/store/lock-stores.factory.js';
import { resolveLockOptions } from '../../lib/utils/resolve-lock-options.util.js';
import { exerciseEngine } from '../support/exercise-engine.js';
import { createLockApp } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** The CHECK constraints of the hot-path tables (the second migration drops them, its `down` restores them). */
async function hotPathChecks(db: TestDatabase): Promise<string[]> {
  const rows = await db.query<{ conname: string }>(
    `SELECT conname FROM pg_constraint WHERE contype = 'c' AND conrelid IN ('locking'::regclass, 'locking_log'::regclass)
     ORDER BY conname`,
  );
  return rows.map((row) => row.conname);
}

/** The one-lock, one-stamp twins of the hot-path functions (added by the second migration). */
async function scalarTwins(db: TestDatabase): Promise<string[]> {
  const rows = await db.query<{ proname: string }>(
    `SELECT proname FROM pg_proc WHERE proname IN ('locking_try_acquire_one', 'locking_release_one') ORDER BY proname`,
  );
  return rows.map((row) => row.proname);
}

/** Whether both release functions update the log row before they delete the lock rows (the third migration). */
async function releaseTakesLogRowFirst(db: TestDatabase): Promise<boolean> {
  const rows = await db.query<{ src: string }>(
    `SELECT prosrc AS src FROM pg_proc WHERE proname IN ('locking_release', 'locking_release_one')`,
  );
  return rows.every((row) => row.src.indexOf('UPDATE locking_log') < row.src.indexOf('DELETE FROM locking'));
}

/** Whether waiters are ordered (the fourth migration): `locking_waiters.seq` exists. */
async function waiterOrder(db: TestDatabase): Promise<boolean> {
  const rows = await db.query(`SELECT 1 FROM pg_attribute WHERE attrelid = 'locking_waiters'::regclass AND attname = 'seq'`);
  return rows.length === 1;
}

/** Whether forced release is installed (the fifth migration): its function and the log's audit columns. */
async function forcedRelease(db: TestDatabase): Promise<boolean> {
  const fn = await db.query(`SELECT 1 FROM pg_proc WHERE proname = 'locking_force_release'`);
  const columns = await db.query(
    `SELECT 1 FROM pg_attribute WHERE attrelid = 'locking_log'::regclass AND attname IN ('ended_by', 'end_reason')
        AND NOT attisdropped`,
  );
  return fn.length === 1 && columns.length === 2;
}

/** Whether a group is checked in one statement (the sixth migration). */
async function groupChecks(db: TestDatabase): Promise<boolean> {
  const rows = await db.query<{ src: string }>(`SELECT prosrc AS src FROM pg_proc WHERE proname = 'locking_try_acquire'`);
  return rows.length === 1 && (rows[0]?.src.includes('FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode)\n          WHERE') ?? false);
}

/** Whether the group check probes each name (GroupCheckProbes1797100000000) rather than asking `EXISTS` of the table. */
async function groupCheckProbes(db: TestDatabase): Promise<boolean> {
  const rows = await db.query<{ src: string }>(`SELECT prosrc AS src FROM pg_proc WHERE proname = 'locking_try_acquire'`);
  return rows[0]?.src.includes('(SELECT true FROM locking l WHERE l.lock_name = r.name LIMIT 1) IS NOT NULL') ?? false;
}

/** Whether a release hands a freed name over (`LockHandOver1797300000000`): the columns and the two functions. */
async function handOvers(db: TestDatabase): Promise<boolean> {
  const columns = await db.query(
    `SELECT 1 FROM information_schema.columns WHERE table_name = 'locking_waiters' AND column_name IN ('granted', 'handover')`,
  );
  const fns = await db.query(`SELECT 1 FROM pg_proc WHERE proname IN ('locking_hand_over', 'locking_reap_lapsed')`);
  const release = await db.query<{ src: string }>(`SELECT prosrc AS src FROM pg_proc WHERE proname = 'locking_release_one'`);
  const calls = release[0]?.src.includes('locking_hand_over') ?? false;
  if (columns.length === 2 && fns.length === 2 && calls) return true;
  if (columns.length === 0 && fns.length === 0 && !calls) return false;
  throw new Error(`half a hand-over: ${columns.length} columns, ${fns.length} functions, release calls it: ${calls}`);
}

/** An instance of the library (its app id `appId`) starts on `db` as it is, takes and releases locks, and stops. */
async function engineWorks(db: TestDatabase, appId: string): Promise<void> {
  const app = await createLockApp(db.url, { appId });
  await exerciseEngine(app.locks);
  await app.close();
}

/** Whether the run history of scheduled jobs exists (the eighth migration). */
async function jobHistory(db: TestDatabase): Promise<boolean> {
  const rows = await db.query(`SELECT 1 FROM pg_class WHERE relname IN ('locking_job_run', 'locking_job') AND relkind = 'r'`);
  return rows.length === 2;
}

/** Whether `locking_job_run.claimable_until` and `locking_claim_job_tick` exist (JobRunClaims1796600000000). */
/** Whether the table of leader election's terms is there (`LeaderTerms1796900000000`). */
async function leaderTerms(db: TestDatabase): Promise<boolean> {
  return (await db.query(`SELECT 1 FROM information_schema.tables WHERE table_name = 'locking_leaders'`)).length === 1;
}

async function jobClaims(db: TestDatabase): Promise<boolean> {
  const column = await db.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'locking_job_run' AND column_name = 'claimable_until'`);
  const fn = await db.query(`SELECT 1 FROM pg_proc WHERE proname = 'locking_claim_job_tick'`);
  return column.length === 1 && fn.length === 1;
}

/** Whether the controls of scheduled jobs exist (JobControls1796800000000): their tables, functions and columns. */
async function jobControls(db: TestDatabase): Promise<boolean> {
  const tables = await db.query(`SELECT 1 FROM pg_class WHERE relname IN ('locking_job_pause', 'locking_job_action') AND relkind = 'r'`);
  const fns = await db.query(`SELECT 1 FROM pg_proc WHERE proname IN ('locking_claim_controlled_tick', 'locking_claim_job_request')`);
  const columns = await db.query(
    `SELECT 1 FROM information_schema.columns WHERE table_name = 'locking_job_run' AND column_name IN ('manual', 'actor', 'reason')`,
  );
  return tables.length === 2 && fns.length === 2 && columns.length === 3;
}

/**
 * Whether a write yields to an earlier waiter (FairLockWaiters1796700000000): with a live waiter row of a reader on
 * `QW`, a write request that does not wait is refused by the one-lock function, a one-lock group and a two-lock group
 * of the batch function; before that migration all three are granted. Leaves no row behind.
 */
async function writersQueue(db: TestDatabase): Promise<boolean> {
  const calls = [
    `SELECT locking_try_acquire_one('q', 'q', 'QW', 'W', NULL, 1, 1, 1000) AS s`,
    `SELECT unnest(locking_try_acquire('q', 'q', ARRAY['QW'], ARRAY['W'], ARRAY[1], ARRAY[NULL]::text[], 1, 1, 1000)) AS s`,
    `SELECT unnest(locking_try_acquire('q', 'q', ARRAY['QW', 'QX'], ARRAY['W', 'W'], ARRAY[2], ARRAY[NULL]::text[], 1, 1, 1000)) AS s`,
  ];
  await db.query(`INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires)
                  VALUES ('QW', 'early', 'R', 'other', now() + interval '1 minute')`);
  const stamps: number[] = [];
  try {
    for (const call of calls) {
      stamps.push(Number((await db.query<{ s: string }>(call))[0]?.s));
      // A grant is freed at once: the next call sees only the waiter.
      await db.query(`UPDATE locking_log SET status = 'RELEASED', ended = now() WHERE app_id = 'q' AND status = 'ACQUIRED'`);
      await db.query(`DELETE FROM locking WHERE app_id = 'q'`);
    }
  } finally {
    await db.query(`DELETE FROM locking_waiters WHERE waiter = 'early'`);
  }
  if (stamps.every((stamp) => stamp === 0)) return true;
  if (stamps.every((stamp) => stamp > 0)) return false;
  throw new Error(`the functions disagree: ${stamps.join(', ')}`);
}

describe('shipped migrations', () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    dataSource = new DataSource({
      type: 'postgres',
      url: db.url,
      entities: [...LOCK_ENTITIES],
      migrations: [...LOCK_MIGRATIONS],
    });
    await dataSource.initialize();
  });

  afterAll(async () => {
    await dataSource.destroy();
    await db.drop();
  });

  it('run in order, and the engine works at each version, down and up again', async () => {
    const applied = await dataSource.runMigrations();
    expect(applied.map((migration) => migration.name)).toEqual(LOCK_MIGRATIONS.map((migration) => migration.name));
    expect(await hotPathChecks(db)).toEqual([]);
    expect(await scalarTwins(db)).toEqual(['locking_release_one', 'locking_try_acquire_one']);
    expect(await releaseTakesLogRowFirst(db)).toBe(true);
    expect(await waiterOrder(db)).toBe(true);
    expect(await forcedRelease(db)).toBe(true);
    expect(await groupChecks(db)).toBe(true);
    expect(await writersQueue(db)).toBe(true);
    expect(await jobControls(db)).toBe(true);
    expect(await handOvers(db)).toBe(true);
    await engineWorks(db, 'latest');

    await dataSource.undoLastMigration(); // the hand-over: the columns and functions go, the eighth version is back
    expect(await handOvers(db)).toBe(false);
    expect(await groupCheckProbes(db)).toBe(true);
    expect(await writersQueue(db)).toBe(true);
    // The code of this version on a database before the hand-over: its waiters register as before and take their
    // grants themselves.
    await engineWorks(db, 'before-hand-over');

    await dataSource.undoLastMigration(); // MySQL's certified writes: nothing on PostgreSQL
    expect(await groupCheckProbes(db)).toBe(true);
    await dataSource.undoLastMigration(); // the group check's probes: the seventh version's function is back
    expect(await groupCheckProbes(db)).toBe(false);
    expect(await groupChecks(db)).toBe(true);
    expect(await writersQueue(db)).toBe(true);
    await engineWorks(db, 'before-probes');

    expect(await leaderTerms(db)).toBe(true);
    await dataSource.undoLastMigration(); // MySQL's quiet release: nothing on PostgreSQL
    expect(await leaderTerms(db)).toBe(true);
    expect(await scalarTwins(db)).toEqual(['locking_release_one', 'locking_try_acquire_one']);
    await dataSource.undoLastMigration(); // the leader terms: their table goes, the rest stays
    expect(await leaderTerms(db)).toBe(false);
    expect(await writersQueue(db)).toBe(true);
    // The job controls: their tables, functions and columns go; a paused tick's row goes with them.
    await db.query(`INSERT INTO locking_job_run (job, tick, outcome, actor, reason) VALUES ('J', now(), 'paused', 'a', 'r')`);
    await dataSource.undoLastMigration();
    expect(await jobControls(db)).toBe(false);
    expect(await db.query(`SELECT 1 FROM locking_job_run WHERE job = 'J'`)).toEqual([]);
    expect(await jobClaims(db)).toBe(true);

    await dataSource.undoLastMigration(); // the fair waiters: writers no longer queue, the sixth version's check is back
    expect(await writersQueue(db)).toBe(false);
    expect(await groupChecks(db)).toBe(true);
    // The code of this version on a database at the previous migration: served, with the previous order.
    await engineWorks(db, 'thirteenth');

    expect(await jobClaims(db)).toBe(true);
    await dataSource.undoLastMigration(); // the job claims' column and function go; the history stays
    expect(await jobClaims(db)).toBe(false);
    expect(await jobHistory(db)).toBe(true);
    // The code of this version on it: its claims and pruning say the migration is missing (the jobs then run under
    // their locks, without history, as before the history existed).
    const claims = createJobRunStore(dataSource, resolveLockOptions({ appId: 'twelfth' }));
    await expect(claims.claim('Old.run', { at: 0 }, 'twelfth', 1)).rejects.toBeInstanceOf(LockTablesMissingError);
    await expect(claims.pruneRuns(1000, 10)).rejects.toBeInstanceOf(LockTablesMissingError);
    await engineWorks(db, 'twelfth');

    await dataSource.undoLastMigration(); // the doorbells: nothing on PostgreSQL (LISTEN/NOTIFY)
    expect(await hotPathChecks(db)).toEqual([]);
    await dataSource.undoLastMigration(); // MySQL's procedures, second version: nothing changes on PostgreSQL
    expect(await hotPathChecks(db)).toEqual([]);
    expect(await scalarTwins(db)).toEqual(['locking_release_one', 'locking_try_acquire_one']);
    await dataSource.undoLastMigration(); // the instances table: the engine still starts and works without it
    expect(await db.query(`SELECT to_regclass('locking_instances') AS t`)).toEqual([{ t: null }]);
    await engineWorks(db, 'eighth');

    expect(await jobHistory(db)).toBe(true);
    await dataSource.undoLastMigration(); // the run history of scheduled jobs: its tables go
    expect(await jobHistory(db)).toBe(false);
    await engineWorks(db, 'seventh');

    await dataSource.undoLastMigration(); // MySQL's stored procedures: nothing changes on PostgreSQL
    expect(await groupChecks(db)).toBe(true);
    expect(await hotPathChecks(db)).toEqual([]);
    await dataSource.undoLastMigration(); // the group checks in one statement
    expect(await groupChecks(db)).toBe(false);
    expect(await forcedRelease(db)).toBe(true);
    let app = await createLockApp(db.url, { appId: 'fifth' });
    await exerciseEngine(app.locks);
    const forced = await app.locks.tryLocks(['F_WRITE']);
    await LockAdminService.create(dataSource, { actor: 'ops' }).forceRelease(forced, 'stuck');
    await app.close();

    await dataSource.undoLastMigration(); // forced release: a FORCED row becomes REAPED, the audit columns go
    expect(await forcedRelease(db)).toBe(false);
    expect(await db.query('SELECT status FROM locking_log WHERE stamp = $1', [forced])).toEqual([{ status: 'REAPED' }]);
    expect(await waiterOrder(db)).toBe(true);
    app = await createLockApp(db.url, { appId: 'fourth' });
    await exerciseEngine(app.locks);
    expect((await app.locks.getLog()).find((entry) => entry.stamp === forced)).toMatchObject({ status: 'REAPED' });
    await app.close();

    await dataSource.undoLastMigration(); // the ordered waiters
    expect(await waiterOrder(db)).toBe(false);
    expect(await releaseTakesLogRowFirst(db)).toBe(true);
    await engineWorks(db, 'third');

    await dataSource.undoLastMigration(); // the ordered release: the lock rows before the log row again
    expect(await releaseTakesLogRowFirst(db)).toBe(false);
    expect(await scalarTwins(db)).toEqual(['locking_release_one', 'locking_try_acquire_one']);
    await engineWorks(db, 'second');

    await dataSource.undoLastMigration(); // the faster functions
    expect(await hotPathChecks(db)).toEqual(['locking_log_status_ck', 'locking_mode_ck']);
    expect(await scalarTwins(db)).toEqual([]); // this library then takes single locks with the batch functions
    await engineWorks(db, 'first');

    expect((await dataSource.runMigrations()).length).toBe(LOCK_MIGRATIONS.length - 1);
    expect(await groupChecks(db)).toBe(true);
    expect(await releaseTakesLogRowFirst(db)).toBe(true);
    expect(await waiterOrder(db)).toBe(true);
    expect(await forcedRelease(db)).toBe(true);
    expect(await jobHistory(db)).toBe(true);
    expect(await writersQueue(db)).toBe(true);
    expect(await groupCheckProbes(db)).toBe(true);
    expect(await handOvers(db)).toBe(true);
    await engineWorks(db, 'latest-again');
  });

  it('leave nothing for `synchronize` to change: LOCK_ENTITIES match the migrated schema', async () => {
    const pending = await dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query)).toEqual([]);
  });

  it('refuse a mode other than R or W even without the CHECK constraint', async () => {
    await expect(
      db.query(`SELECT locking_try_acquire('x', 'x', ARRAY['BAD'], ARRAY['X'], ARRAY[1], ARRAY[NULL]::text[], 1, 1, 1000)`),
    ).rejects.toThrow(/modes must be R or W/);
    for (const mode of ["'X'", 'NULL']) {
      await expect(db.query(`SELECT locking_try_acquire_one('x', 'x', 'BAD', ${mode}, NULL, 1, 1, 1000)`)).rejects.toThrow(
        /modes must be R or W/,
      );
    }
    expect(await db.query('SELECT * FROM locking')).toEqual([]);
  });
});
