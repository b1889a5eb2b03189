import { type LockSpec, LockStoreError } from 'nestjs-db-locks';
import {
  DROP_ALL_MYSQL_LOCK_PROCEDURES,
  DROP_MYSQL_LOCK_PROCEDURES_V2,
} from '../../lib/migrations/sql/mysql-lock.procedures-v2.sql.js';
import { LockStore } from '../../lib/store/lock.store.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { namesOf } from '../support/dialects.js';
import { openSession } from '../support/dialect-sql.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import type { MysqlLockStore } from '../../lib/store/mysql/mysql-lock.store.js';

/** Replaces procedure `name` (of `params`) with one that fails loudly: a call of it is then seen by its caller. */
async function replaceWithFailing(db: TestDatabase, name: string, params: string): Promise<void> {
  await db.query(`DROP PROCEDURE ${name}`);
  await db.query(`CREATE PROCEDURE ${name}(${params}) SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'called ${name}'`);
}

const TRY_ACQUIRE_PARAMS =
  'a VARCHAR(200), b VARCHAR(200), c LONGTEXT, d LONGTEXT, e BIGINT, f VARCHAR(64), g INT, h INT';

describeOnMysql('the MySQL/MariaDB hot path as stored procedures (one CALL per grant, one per release)', () => {
  const apps = trackApps(createLockApp);
  const databases: TestDatabase[] = [];
  const fresh = async (): Promise<TestDatabase> => {
    const db = await createMysqlTestDatabase();
    databases.push(db);
    return db;
  };
  afterEach(() => apps.closeAll());
  afterAll(() => Promise.all(databases.map((db) => db.drop())));

  it.each<[string, LockSpec[]]>([
    ['locking_try_acquire', ['P_WRITE', 'Q_READ']],
    ['locking_try_acquire_one', ['P_WRITE']],
  ])('grants through %s: a failing procedure is what the caller sees, typed, and nothing is held', async (procedure, group) => {
    const db = await fresh();
    await replaceWithFailing(db, procedure, TRY_ACQUIRE_PARAMS);
    const app = await apps.start(db.url, { appId: 'called' });
    const error = await app.locks.tryLocks(group).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockStoreError);
    expect(String((error as LockStoreError).cause)).toContain(`called ${procedure}`);
    expect((error as LockStoreError).outcomeUnknown).toBe(false); // the server answered: nothing committed
    expect(await lockRows(db)).toEqual([]);
  });

  it('concurrent grants of one process leave in one call of locking_try_acquire_batch', async () => {
    const db = await fresh();
    await replaceWithFailing(db, 'locking_try_acquire_batch', 'a VARCHAR(200), b VARCHAR(200), c LONGTEXT, d BIGINT, e INT, f INT');
    const app = await apps.start(db.url, { appId: 'batched' });
    // Two calls go at once (one each); the six behind them leave together, in one call, when one of those answers.
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => app.locks.tryLocks([`B${i}_WRITE`])));
    const failed = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(failed).toHaveLength(6);
    for (const outcome of failed) {
      expect(String(((outcome as PromiseRejectedResult).reason as LockStoreError).cause)).toContain(
        'called locking_try_acquire_batch',
      );
    }
    expect((await lockRows(db)).map((row) => row.lock_name).sort()).toEqual(['B0', 'B1']);
  });

  it("at the procedures' first version (no twin), a grant of one lock goes to the group procedure", async () => {
    const db = await fresh();
    for (const statement of DROP_MYSQL_LOCK_PROCEDURES_V2) await db.query(statement);
    const app = await apps.start(db.url, { appId: 'first-version' });
    const held = await app.locks.tryLocks(['ONE_WRITE']);
    expect(held).toBeGreaterThan(0);
    expect(await app.locks.tryLocks(['ONE_READ'])).toBe(0);
    // The group procedure served it (it is the one that fails now); the twin is not asked again for a while.
    await replaceWithFailing(db, 'locking_try_acquire', TRY_ACQUIRE_PARAMS);
    const error = await app.locks.tryLocks(['TWO_WRITE']).catch((e: unknown) => e);
    expect(String((error as LockStoreError).cause)).toContain('called locking_try_acquire');
    await app.locks.releaseLocks(held);
    expect(await lockRows(db)).toEqual([]);
  });

  it.each([
    ['locking_release_quiet', 'a grant of this instance (it knows its names)', false],
    ['locking_release', 'a stamp whose names the instance does not know', true],
  ])('releases through %s %s, ending the log row and freeing the rows in one call', async (procedure, _, forget) => {
    const db = await fresh();
    const app = await apps.start(db.url, { appId: 'release' });
    const stamp = await app.locks.tryLocks(['R1_WRITE', 'R2_READ']);
    if (forget) (app.app.get(LockStore) as MysqlLockStore).releases.forgetAll();
    await replaceWithFailing(db, procedure, 'a BIGINT, b VARCHAR(200)');
    const error = await app.locks.releaseLocks(stamp).catch((e: unknown) => e);
    expect(String((error as LockStoreError).cause)).toContain(`called ${procedure}`);
    expect(await lockRows(db)).toHaveLength(2); // still held: the release did not run
  });

  it('keeps names byte for byte in a latin1 database, for a group of 40 names of up to 200 characters', async () => {
    const db = await fresh();
    const app = await apps.start(db.url, { appId: 'wide' });
    const names = Array.from({ length: 40 }, (_, i) => `${String(i).padStart(2, '0')}:Mixed.Case/${'x'.repeat(186)}`);
    const stamp = await app.locks.tryLocks(names.map((name, i) => ({ name, mode: i % 2 ? 'read' : 'write' })));
    expect(stamp).toBeGreaterThan(0);
    expect((await lockRows(db)).map((row) => row.lock_name)).toEqual(names);
    const [log] = await db.query<{ lock_names: unknown }>('SELECT lock_names FROM locking_log WHERE stamp = $1', [stamp]);
    expect(namesOf(log!.lock_names)).toEqual(names);
    // Another instance sees the same names held, and the same name in another case free: bytes were compared.
    const other = await apps.start(db.url, { appId: 'other' });
    expect(await other.locks.tryLocks([`${names[0]}_READ`])).toBe(0);
    expect(await other.locks.tryLocks([`${names[0]!.toLowerCase()}_READ`])).toBeGreaterThan(0);
    await app.locks.releaseLocks(stamp);
    expect(await other.locks.tryLocks([`${names[0]}_READ`])).toBeGreaterThan(0);
  });

  it('checks the held rows without locking them: a lock row another transaction is writing holds no grant up', async () => {
    const db = await fresh();
    const app = await apps.start(db.url, { appId: 'reader', queryTimeoutMs: 2000 });
    const writer = await openSession(db, { name: 'MariaDB' });
    try {
      // As a release, a reap or a forced release in flight holds the rows it deletes: uncommitted, still counted.
      await writer.query(`INSERT INTO locking VALUES ('INFLIGHT', 'R', 'other', 999999, UTC_TIMESTAMP(6))`);
      // At READ COMMITTED, as the library's own releases run (at REPEATABLE READ the DELETE would also lock the gap
      // after the newest stamp, where every new grant inserts).
      await writer.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await writer.query('START TRANSACTION');
      await writer.query(`DELETE FROM locking WHERE stamp = 999999`);
      // A locking read would wait for the writer's row lock until the query timeout (LockStoreError).
      expect(await app.locks.tryLocks(['INFLIGHT_WRITE'])).toBe(0); // answered at once: the committed reader counts
      expect(await app.locks.tryLocks(['ELSEWHERE_WRITE'])).toBeGreaterThan(0);
    } finally {
      await writer.query('ROLLBACK');
      await writer.end();
    }
  });

  it('without the procedures (a database not migrated to this version) sends the same statements one by one', async () => {
    const db = await fresh();
    for (const statement of DROP_ALL_MYSQL_LOCK_PROCEDURES) await db.query(statement);
    const app = await apps.start(db.url, { appId: 'older' });
    const first = await app.locks.tryLocks(['OLD_WRITE']);
    expect(first).toBeGreaterThan(0);
    expect(await app.locks.tryLocks(['OLD_READ'])).toBe(0);
    await app.locks.releaseLocks(first);
    const [row] = await db.query<{ status: string }>('SELECT status FROM locking_log WHERE stamp = $1', [first]);
    expect(row?.status).toBe('RELEASED');
    expect(await lockRows(db)).toEqual([]);
  });
});
