import { DataSource } from 'typeorm';
import { LOCK_MIGRATIONS, LOCK_MYSQL_ENTITIES, LockAdminService, LockTablesMissingError } from 'nestjs-db-locks';
import { createJobRunStore } from '../../lib/store/lock-stores.factory.js';
import { resolveLockOptions } from '../../lib/utils/resolve-lock-options.util.js';
import { exerciseEngine } from '../support/exercise-engine.js';
import { createLockApp } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

const NAMES = LOCK_MIGRATIONS.map((migration) => migration.name);
/** The procedures before the quiet release: the group procedure, its batch and one-lock twins, the release. */
const DOORBELL_PROCEDURES = ['locking_release', 'locking_try_acquire', 'locking_try_acquire_batch', 'locking_try_acquire_one'];
/** The procedures of the latest version: those and the quiet release (MysqlQuietRelease1797000000000). */
const LATEST_PROCEDURES = ['locking_release', 'locking_release_quiet', ...DOORBELL_PROCEDURES.slice(1)];
const TABLES = ['locking', 'locking_doorbells', 'locking_instances', 'locking_log', 'locking_names', 'locking_permissions', 'locking_waiters'];
/** The tables of the run history of scheduled jobs. */
const JOB_TABLES = ['locking_job', 'locking_job_run'];
/** The tables of the job controls (JobControls1796800000000). */
const CONTROL_TABLES = ['locking_job_action', 'locking_job_pause'];

/** The lock tables' columns, keys and CHECK constraints, from the catalogs: equal exactly when the schema is. */
async function schemaOf(db: TestDatabase): Promise<unknown> {
  return {
    columns: await db.query(
      `SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA, COLLATION_NAME
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'locking%'
        ORDER BY TABLE_NAME, ORDINAL_POSITION`,
    ),
    indexes: await db.query(
      `SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE
         FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'locking%'
        ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
    ),
    checks: await db.query(
      `SELECT TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
        WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'locking%' ORDER BY TABLE_NAME, CONSTRAINT_NAME`,
    ),
  };
}

/** The lock tables that exist. */
async function tablesOf(db: TestDatabase): Promise<string[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'locking%'
      ORDER BY TABLE_NAME`,
  );
  return rows.map((row) => row.name);
}

/** Every row of every lock table, in a stable order. */
async function rowsOf(db: TestDatabase): Promise<unknown> {
  return {
    locking: await db.query('SELECT * FROM locking ORDER BY stamp, lock_name'),
    log: await db.query('SELECT * FROM locking_log ORDER BY stamp'),
    names: await db.query('SELECT * FROM locking_names ORDER BY lock_name'),
    permissions: await db.query('SELECT * FROM locking_permissions ORDER BY lock_name, mode'),
    waiters: await db.query('SELECT * FROM locking_waiters ORDER BY seq'),
  };
}

/**
 * Whether a write yields to an earlier waiter (FairLockWaiters1796700000000): with a live waiter row of a reader on
 * `QW`, a write request that does not wait is refused by the one-lock procedure, the group procedure (two locks) and
 * the batch procedure; before that migration all three grant it. Leaves no row behind but the log rows it ended.
 */
async function writersQueue(db: TestDatabase): Promise<boolean> {
  const calls = [
    `CALL locking_try_acquire_one('q', 'q', 'QW', 'W', 1000, NULL, 1, 1)`,
    `CALL locking_try_acquire('q', 'q', '["QW", "QX"]', '["W", "W"]', 1000, NULL, 1, 1)`,
    `CALL locking_try_acquire_batch('q', 'q', '[[["QW"], ["W"], ""]]', 1000, 1, 1)`,
  ];
  await db.query(`INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, registered)
                  VALUES ('QW', 'early', 'R', 'other', UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE, UTC_TIMESTAMP(6))`);
  const stamps: number[] = [];
  try {
    for (const call of calls) {
      const [rows] = await db.query<never>(call) as unknown as [{ stamp?: string; stamps?: string }[]];
      const row = rows[0];
      stamps.push(Number(row?.stamp ?? JSON.parse(String(row?.stamps))[0]));
      // A grant is freed at once: the next call sees only the waiter.
      await db.query(`UPDATE locking_log SET status = 'RELEASED', ended = UTC_TIMESTAMP(6) WHERE app_id = 'q' AND status = 'ACQUIRED'`);
      await db.query(`DELETE FROM locking WHERE app_id = 'q'`);
    }
  } finally {
    await db.query(`DELETE FROM locking_waiters WHERE waiter = 'early'`);
  }
  if (stamps.every((stamp) => stamp === 0)) return true;
  if (stamps.every((stamp) => stamp > 0)) return false;
  throw new Error(`the procedures disagree: ${stamps.join(', ')}`);
}

/**
 * On MySQL and MariaDB the first migration creates the tables in their final form and the later ones have nothing to
 * do: undoing those must keep the schema and every row, undoing the first drops the tables, and running them all
 * again gives the same schema, empty, that works.
 */
describeOnMysql('shipped migrations on MySQL/MariaDB', () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createMysqlTestDatabase({ migrate: false });
    dataSource = new DataSource({
      type: 'mariadb',
      url: db.url,
      timezone: 'Z',
      entities: [...LOCK_MYSQL_ENTITIES],
      migrations: [...LOCK_MIGRATIONS],
    });
    await dataSource.initialize();
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  /** The stored procedures of the test database. */
  const proceduresOf = async (): Promise<string[]> =>
    (
      await db.query<{ name: string }>(
        'SELECT ROUTINE_NAME AS name FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() ORDER BY 1',
      )
    ).map((row) => row.name);

  /** How many times `locking_try_acquire` reads the group's JSON as a table (3 in the first version, 2 in the second). */
  const jsonTablesOfTryAcquire = async (): Promise<number> => {
    const [row] = await db.query<{ body: string }>(
      `SELECT ROUTINE_DEFINITION AS body FROM information_schema.ROUTINES
        WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'locking_try_acquire'`,
    );
    return (String(row?.body).match(/JSON_TABLE\(/g) ?? []).length;
  };

  it('run in order; undone one by one, the later ones keep schema and rows; all undone and run again, the engine works', async () => {
    const admin = LockAdminService.create(dataSource, { actor: 'ops' });
    expect(await admin.getSchemaStatus()).toEqual({ applied: [], pending: NAMES, tablesPresent: false });
    expect((await dataSource.runMigrations()).map((migration) => migration.name)).toEqual(NAMES);
    expect((await tablesOf(db)).sort()).toEqual([...TABLES, ...JOB_TABLES, ...CONTROL_TABLES, 'locking_leaders', 'locking_doorbell_rings'].sort());
    expect(await admin.getSchemaStatus()).toEqual({ applied: NAMES, pending: [], tablesPresent: true });
    expect(await proceduresOf()).toEqual(LATEST_PROCEDURES);
    const releaseBody = async () =>
      String((await db.query<{ body: string }>(`SELECT ROUTINE_DEFINITION AS body FROM information_schema.ROUTINES
        WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'locking_release'`))[0]?.body);
    // The hand-over: the release hands a freed name to its first waiter (the waiters' rows say who may take one).
    const handOverColumns = async () =>
      (await db.query(`SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
        AND TABLE_NAME = 'locking_waiters' AND COLUMN_NAME IN ('instance', 'handover', 'granted')`)).length;
    expect(await handOverColumns()).toBe(3);
    expect(await releaseBody()).toContain('v_handed');
    // The certified writes: a grant counts itself in its names' rows; the app id's claim has a lease.
    const countedColumns = async () =>
      (await db.query(`SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
        AND ((TABLE_NAME = 'locking_names' AND COLUMN_NAME = 'grants')
          OR (TABLE_NAME = 'locking_instances' AND COLUMN_NAME IN ('lease_holder', 'lease_node', 'lease_until')))`)).length;
    const countsGrants = async () =>
      String((await db.query<{ body: string }>(`SELECT ROUTINE_DEFINITION AS body FROM information_schema.ROUTINES
        WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'locking_try_acquire_one'`))[0]?.body).includes('grants + 1');
    expect(await countedColumns()).toBe(4);
    expect(await countsGrants()).toBe(true);
    await dataSource.undoLastMigration(); // the hand-over: its columns go, the previous releases and acquisitions are back
    expect(await handOverColumns()).toBe(0);
    expect(await proceduresOf()).toEqual(LATEST_PROCEDURES);
    const doorbellRelease = await releaseBody();
    expect(doorbellRelease).not.toContain('v_handed');
    expect(await countedColumns()).toBe(4);
    await dataSource.undoLastMigration(); // the certified writes: the third version is back, the columns and rings go
    expect(await countedColumns()).toBe(0);
    expect(await tablesOf(db)).toEqual([...TABLES, ...JOB_TABLES, ...CONTROL_TABLES, 'locking_leaders'].sort());
    expect(await countsGrants()).toBe(false);
    expect(await proceduresOf()).toEqual(LATEST_PROCEDURES);
    expect(await writersQueue(db)).toBe(true);
    const latestSchema = await schemaOf(db);
    await dataSource.undoLastMigration(); // the group check's probes: nothing on MySQL and MariaDB
    expect(await proceduresOf()).toEqual(LATEST_PROCEDURES);
    expect(await schemaOf(db)).toEqual(latestSchema);
    await dataSource.undoLastMigration(); // the quiet release: its procedure goes, locking_release and the tables stay
    expect(await proceduresOf()).toEqual(DOORBELL_PROCEDURES);
    expect(await releaseBody()).toBe(doorbellRelease);
    expect(await schemaOf(db)).toEqual(latestSchema);
    // The code of this version on a database at the previous migration: every release calls locking_release.
    let app = await createLockApp(db.url, { appId: 'fifteenth' });
    await exerciseEngine(app.locks);
    await app.close();
    await dataSource.undoLastMigration(); // the leader terms: their table goes, the rest stays
    expect(await tablesOf(db)).toEqual([...TABLES, ...JOB_TABLES, ...CONTROL_TABLES].sort());
    expect(await proceduresOf()).toEqual(DOORBELL_PROCEDURES);
    expect(await jsonTablesOfTryAcquire()).toBe(2); // the second version: the group is checked name by name
    expect(await writersQueue(db)).toBe(true);
    const controlColumns = async () =>
      (await db.query(`SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
        AND TABLE_NAME = 'locking_job_run' AND COLUMN_NAME IN ('manual', 'actor', 'reason')`)).length;
    expect(await controlColumns()).toBe(3);
    // The job controls: their tables and columns go, with the rows of their outcomes.
    await db.query(`INSERT INTO locking_job_run (job, tick, outcome, actor, reason) VALUES ('J', UTC_TIMESTAMP(3), 'paused', 'a', 'r')`);
    await dataSource.undoLastMigration();
    expect(await tablesOf(db)).toEqual([...TABLES, ...JOB_TABLES].sort());
    expect(await controlColumns()).toBe(0);
    expect(await db.query(`SELECT 1 FROM locking_job_run WHERE job = 'J'`)).toEqual([]);
    const fair = await schemaOf(db);
    await dataSource.undoLastMigration(); // the fair waiters: the procedures' second version is back
    expect(await proceduresOf()).toEqual(DOORBELL_PROCEDURES);
    expect(await writersQueue(db)).toBe(false);
    expect(await schemaOf(db)).toEqual(fair);
    // The code of this version on a database at the previous migration: served, with the previous order.
    app = await createLockApp(db.url, { appId: 'thirteenth' });
    await exerciseEngine(app.locks);
    await app.close();
    await dataSource.runMigrations();
    expect(await writersQueue(db)).toBe(true);
    expect((await tablesOf(db)).sort()).toEqual([...TABLES, ...JOB_TABLES, ...CONTROL_TABLES, 'locking_leaders', 'locking_doorbell_rings'].sort());
    const full = await schemaOf(db);

    // Rows of every kind: a permits row, released and forced grants, and a grant left by an instance that stopped.
    app = await createLockApp(db.url, { appId: 'keeper' });
    await exerciseEngine(app.locks);
    await admin.setPermits('P', 'read', 3);
    const forced = await app.locks.tryLocks(['F_WRITE']);
    await admin.forceRelease(forced, 'stuck');
    const kept = await app.locks.tryLocks(['K_WRITE']);
    await app.close(); // K stays held: its holder is told, its rows stay
    expect(await releaseBody()).toContain('locking_doorbells');
    const claimsColumn = async () =>
      (await db.query(`SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
        AND TABLE_NAME = 'locking_job_run' AND COLUMN_NAME = 'claimable_until'`)).length;
    expect(await claimsColumn()).toBe(1);
    await dataSource.undoLastMigration(); // the hand-over (see above)
    await dataSource.undoLastMigration(); // the certified writes (see above)
    await dataSource.undoLastMigration(); // the group check's probes (see above)
    await dataSource.undoLastMigration(); // the quiet release (see above)
    await dataSource.undoLastMigration(); // the leader terms (see above)
    await dataSource.undoLastMigration(); // the job controls (see above)
    await dataSource.undoLastMigration(); // the fair waiters (see above)
    await dataSource.undoLastMigration(); // the job claims: their column goes, the history stays
    expect(await claimsColumn()).toBe(0);
    // The code of this version on it: its claims and pruning say the migration is missing (the jobs then run under
    // their locks, without history, as before the history existed).
    const claims = createJobRunStore(dataSource, resolveLockOptions({ appId: 'twelfth' }));
    await expect(claims.claim('Old.run', { at: 0 }, 'twelfth', 1)).rejects.toBeInstanceOf(LockTablesMissingError);
    await expect(claims.pruneRuns(1000, 10)).rejects.toBeInstanceOf(LockTablesMissingError);
    expect(await tablesOf(db)).toEqual([...TABLES, ...JOB_TABLES].sort());
    await dataSource.undoLastMigration(); // the doorbells: their table goes, the first release is back
    expect(await tablesOf(db)).toEqual([...TABLES.filter((table) => table !== 'locking_doorbells'), ...JOB_TABLES].sort());
    expect(await proceduresOf()).toEqual(DOORBELL_PROCEDURES);
    expect(await releaseBody()).not.toContain('locking_doorbells');
    const withoutDoorbells = await schemaOf(db);
    const beforeDown = await rowsOf(db);
    await dataSource.undoLastMigration(); // the procedures' second version: the first is back, rows and schema kept
    expect(await proceduresOf()).toEqual(['locking_release', 'locking_try_acquire']);
    expect(await jsonTablesOfTryAcquire()).toBe(3);
    expect(await rowsOf(db)).toEqual(beforeDown);
    expect(await schemaOf(db)).toEqual(withoutDoorbells);
    app = await createLockApp(db.url, { appId: 'first-procedures' }); // a database at the previous version works
    await exerciseEngine(app.locks);
    expect(await app.locks.tryLocks(['K_WRITE'])).toBe(0); // still held by the instance that stopped
    await app.close();
    await dataSource.undoLastMigration(); // locking_instances: its table goes; the other tables keep schema and rows
    const base = TABLES.filter((table) => table !== 'locking_instances' && table !== 'locking_doorbells');
    expect(await tablesOf(db)).toEqual([...base, ...JOB_TABLES].sort());
    await dataSource.undoLastMigration(); // the run history of scheduled jobs: its tables go, the rest stays
    expect(await tablesOf(db)).toEqual(base);
    expect(await proceduresOf()).toEqual(['locking_release', 'locking_try_acquire']);
    const rows = await rowsOf(db);
    const schema = await schemaOf(db);
    expect(await db.query('SELECT status, ended_by, end_reason FROM locking_log WHERE stamp = $1', [forced])).toEqual([
      { status: 'FORCED', ended_by: 'ops', end_reason: 'stuck' },
    ]);

    for (let undone = 13; undone < NAMES.length; undone++) {
      await dataSource.undoLastMigration();
      expect(await schemaOf(db)).toEqual(schema);
      expect(await rowsOf(db)).toEqual(rows);
      const status = await admin.getSchemaStatus();
      expect(status.pending).toEqual(NAMES.slice(NAMES.length - undone));
      expect(status.tablesPresent).toBe(true);
      expect(await proceduresOf()).toEqual([]); // the last migration's: the grant is sent statement by statement
    }

    // At the first migration only: the engine works on the rows kept. Without locking_instances nothing proves the
    // previous life over: its grant is left to its lease (an hour here) until releaseAllLocks() frees it.
    app = await createLockApp(db.url, { appId: 'keeper' });
    expect(await app.locks.tryLocks(['K_WRITE'])).toBe(0);
    expect(await app.locks.releaseAllLocks()).toBe(1);
    expect(await db.query('SELECT status FROM locking_log WHERE stamp = $1', [kept])).toEqual([{ status: 'RECOVERED' }]);
    expect(app.locks.getLockPermits('P')).toMatchObject({ read: 3 });
    const after = await app.locks.tryLocks(['K_WRITE']);
    expect(after).toBeGreaterThan(kept);
    await app.locks.releaseLocks(after);
    await exerciseEngine(app.locks);
    expect(await app.locks.getHealth()).toMatchObject({ schema: 'outdated', healthy: false });
    await app.close();

    await dataSource.undoLastMigration(); // the first: the tables go, with every row
    expect(await tablesOf(db)).toEqual([]);
    expect(await admin.getSchemaStatus()).toEqual({ applied: [], pending: NAMES, tablesPresent: false });

    expect((await dataSource.runMigrations()).map((migration) => migration.name)).toEqual(NAMES);
    expect(await schemaOf(db)).toEqual(full);
    expect(await proceduresOf()).toEqual(LATEST_PROCEDURES);
    expect(await rowsOf(db)).toEqual({ locking: [], log: [], names: [], permissions: [], waiters: [] });
    app = await createLockApp(db.url, { appId: 'latest-again' });
    await exerciseEngine(app.locks);
    expect(await app.locks.getHealth()).toMatchObject({ schema: 'current', healthy: true });
    await app.close();
  });

  it('leave nothing for `synchronize` to change: LOCK_MYSQL_ENTITIES match the migrated schema', async () => {
    const pending = await dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((query) => query.query)).toEqual([]);
  });
});
