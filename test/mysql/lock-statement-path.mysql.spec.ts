import { LockStoreError } from 'nestjs-db-locks';
import { LockStore } from '../../lib/store/lock.store.js';
import { DROP_ALL_MYSQL_LOCK_PROCEDURES } from '../../lib/migrations/sql/mysql-lock.procedures-v2.sql.js';
import { MysqlLockStore, PROCEDURES_RECHECK_MS } from '../../lib/store/mysql/mysql-lock.store.js';
import { startLoad } from '../support/fault-load.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const TRY_ACQUIRE_PARAMS =
  'a VARCHAR(200), b VARCHAR(200), c LONGTEXT, d LONGTEXT, e BIGINT, f VARCHAR(64), g INT, h INT';

/** The procedures' migration undone (a rolling deploy ahead of it): every grant goes statement by statement. */
async function dropProcedures(db: TestDatabase): Promise<void> {
  for (const statement of DROP_ALL_MYSQL_LOCK_PROCEDURES) await db.query(statement);
}

// Names differ only by case: stored byte-exact, each is a lock of its own, on the fast path and the slow one alike.
describeOnMysql('MySQL/MariaDB grants statement by statement (no stored procedures)', () => {
  let db: TestDatabase;
  const apps = trackApps(createLockApp);

  beforeAll(async () => {
    db = await createMysqlTestDatabase();
    await dropProcedures(db);
  });
  afterEach(() => apps.closeAll());
  afterAll(() => db?.drop());

  it('a group with case variants of a held name is refused: the held name is compared byte for byte', async () => {
    const one = await apps.start(db.url, { appId: 'case-one' });
    const two = await apps.start(db.url, { appId: 'case-two' });
    const held = await one.locks.tryLocks(['doc:a_WRITE']);
    expect(held).toBeGreaterThan(0);
    expect(await two.locks.tryLocks(['doc:A_WRITE', 'doc:a_WRITE'])).toBe(0);
    expect(await two.locks.tryLocks(['doc:a_READ', 'doc:A_READ'])).toBe(0);
    const other = await two.locks.tryLocks(['doc:A_WRITE']); // the other name is free
    expect(other).toBeGreaterThan(held);
    await two.locks.releaseLocks(other);
    await one.locks.releaseLocks(held);
  });

  it("a name's permits are its own, not those of a case variant in the same group", async () => {
    const one = await apps.start(db.url, { appId: 'permits-one' });
    const two = await apps.start(db.url, { appId: 'permits-two' });
    await one.locks.setLockPermits('DOC:X', 'read', 5);
    const held = await one.locks.tryLocks(['doc:x_READ']); // doc:x has the default single read permit
    expect(await two.locks.tryLocks(['DOC:X_READ', 'doc:x_READ'])).toBe(0);
    const wide = await two.locks.tryLocks(['DOC:X_READ']);
    expect(wide).toBeGreaterThan(held);
    await two.locks.releaseLocks(wide);
    await one.locks.releaseLocks(held);
    await one.locks.setLockPermits('DOC:X', 'read', null);
  });

  it('never over-grants case variants under concurrent load, from the holders\' side and in the rows', async () => {
    const instances = await Promise.all(['c1', 'c2', 'c3'].map((appId) => apps.start(db.url, { appId, reaperIntervalMs: 0 }, 6)));
    const sampler = startDbSampler(db.url);
    const load = startLoad(
      instances.map((app) => app.locks),
      { names: ['doc:a', 'doc:A', 'DOC:a'], workers: 3, permits: (name) => instances[0]!.locks.getLockPermits(name) },
    );
    try {
      await until(() => load.report.granted >= 300, 30_000);
    } finally {
      const report = await load.stop();
      const sampled = await sampler.stop();
      expect(report.violations).toEqual([]);
      expect(report.untyped).toEqual([]);
      expect(sampled.violations).toEqual([]);
    }
  });

  it('holding X, a wait for a free Y behind an earlier waiter of [X, Y] is granted at once (it would serve nobody)', async () => {
    const one = await apps.start(db.url, { appId: 'hold-one' });
    const two = await apps.start(db.url, { appId: 'hold-two' });
    const held = await one.locks.tryLocks(['hold:x_WRITE']);
    const group = two.locks.tryLocks(['hold:x_WRITE', 'hold:y_WRITE'], { waitMs: 20_000 });
    group.catch(() => undefined); // if the test fails first, closing `two` ends this wait
    await until(async () => (await db.query(`SELECT 1 FROM locking_waiters WHERE app_id = 'hold-two'`)).length === 2);
    const started = Date.now();
    const y = await one.locks.tryLocks(['hold:y_WRITE'], { waitMs: 3_000 });
    expect(y).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(500);
    await one.locks.releaseLocks(y);
    await one.locks.releaseLocks(held);
    const both = await group;
    expect(both).toBeGreaterThan(y);
    await two.locks.releaseLocks(both);
  });

  it('tries the procedures again after a while: a migration run meanwhile brings the fast path back', async () => {
    const fresh = await createMysqlTestDatabase();
    try {
      await dropProcedures(fresh);
      const app = await apps.start(fresh.url, { appId: 'recheck' });
      await app.locks.releaseLocks(await app.locks.tryLocks(['R_WRITE'])); // the procedures are found missing
      // The procedure comes back (here as one that fails loudly, so that a call of it shows).
      await fresh.query(`CREATE PROCEDURE locking_try_acquire(${TRY_ACQUIRE_PARAMS}) SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'called'`);
      await app.locks.releaseLocks(await app.locks.tryLocks(['R_WRITE'])); // within the recheck interval: statements
      // Once the interval has passed (moved here rather than waited for), the next grant calls the procedure again.
      const store = app.app.get(LockStore) as MysqlLockStore;
      store.acquisitions.missingUntil.group = performance.now() - 1; // the twin is still skipped: the group procedure serves
      const error = await app.locks.tryLocks(['R_WRITE']).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockStoreError);
      expect(String((error as LockStoreError).cause)).toContain('called');
      expect(PROCEDURES_RECHECK_MS).toBe(30_000);
    } finally {
      await apps.closeAll();
      await fresh.drop();
    }
  });
});
