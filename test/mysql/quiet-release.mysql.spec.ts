import mysql from 'mysql2/promise';
import { IllegalMonitorStateError, LOCK_MIGRATIONS, LockHandOver1797300000000, MysqlQuietRelease1797000000000 } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { LockStore } from '../../lib/store/lock.store.js';
import type { MysqlLockStore } from '../../lib/store/mysql/mysql-lock.store.js';
import { pollTiming } from '../../lib/store/mysql/mysql-sessions.util.js';
import type { MysqlStatementRunner } from '../../lib/store/mysql/mysql-statement.runner.js';
import { createLockApp, type LockApp, trackApps } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** A waiter's instance: its own re-check far away, so that only a wake-up (in-process, ring or poll) ends a wait. */
const WAITER = { waitRecheckMs: 60_000 };

/** What the releases of `app` answered: the procedure called, and whether it sent a result set. */
function watchReleases(app: LockApp): { sql: string; rows: boolean; affectedRows: number }[] {
  const runner = (app.app.get(LockStore) as unknown as { runner: MysqlStatementRunner }).runner;
  const seen: { sql: string; rows: boolean; affectedRows: number }[] = [];
  const callAnswer = runner.callAnswer.bind(runner);
  runner.callAnswer = async (operation, grants, sql, values) => {
    const answer = await callAnswer(operation, grants, sql, values);
    if (operation === 'releaseLocks') seen.push({ sql, rows: answer.rows !== undefined, affectedRows: answer.affectedRows });
    return answer as never;
  };
  return seen;
}

describeOnMysql('MySQL/MariaDB: the quiet release (no result set when there is no doorbell to name)', () => {
  const apps = trackApps(createLockApp);
  let db: TestDatabase;
  const saved = { ...pollTiming };

  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  beforeEach(() => {
    // The poll all but off: a wait that ends within tens of ms was woken by the release itself.
    Object.assign(pollTiming, { busyMs: 20_000, idleMs: 20_000 });
  });
  afterEach(async () => {
    await apps.closeAll();
    Object.assign(pollTiming, saved);
    await db.query('DELETE FROM locking_waiters');
  });
  afterAll(() => db?.drop());

  it("answers with its OK packet alone on MariaDB: affected rows > 0 when it released, 0 for a stamp not live or another app's", async () => {
    const app = await apps.start(db.url, { appId: 'quiet' });
    const client = await mysql.createConnection({ uri: db.url });
    try {
      const stamp = await app.locks.tryLocks(['Q_WRITE', 'Q2_READ']);
      const call = async (appId: string) => (await client.query('CALL locking_release_quiet(?, ?)', [stamp, appId]))[0];
      expect(await call('another')).toMatchObject({ affectedRows: 0 }); // not its grant: nothing changes
      expect(await db.query('SELECT lock_name FROM locking WHERE stamp = $1 ORDER BY 1', [stamp])).toHaveLength(2);
      const released = await call('quiet');
      expect(Array.isArray(released)).toBe(false);
      expect(released).toMatchObject({ affectedRows: expect.any(Number) });
      expect((released as { affectedRows: number }).affectedRows).toBeGreaterThan(0);
      expect(await db.query('SELECT 1 FROM locking WHERE stamp = $1', [stamp])).toEqual([]);
      expect(await db.query('SELECT status FROM locking_log WHERE stamp = $1', [stamp])).toEqual([{ status: 'RELEASED' }]);
      expect(await call('quiet')).toMatchObject({ affectedRows: 0 }); // twice: not live any more
      await expect(app.locks.releaseLocks(stamp)).rejects.toThrow(IllegalMonitorStateError);
    } finally {
      await client.end();
    }
  });

  it('releases quietly, and wakes at once a waiter of the same instance, then one of another, then both together', async () => {
    // Two readers at once (one by default), for the last case.
    const permits = { defaultPermits: { read: 2, write: 1 } };
    const holder = await apps.start(db.url, { appId: 'holder', ...WAITER, ...permits });
    const other = await apps.start(db.url, { appId: 'other', ...WAITER, ...permits });
    const releases = watchReleases(holder);
    // No waiter: the release answers no result set; a waiter arriving afterwards is served at once.
    await holder.locks.releaseLocks(await holder.locks.tryLocks(['QA_WRITE']));
    expect(releases).toEqual([{ sql: 'CALL locking_release_quiet(?, ?)', rows: false, affectedRows: expect.any(Number) }]);
    const late = await holder.locks.tryLocks(['QA_WRITE'], { waitMs: 10_000 });
    expect(late).toBeGreaterThan(0);
    await holder.locks.releaseLocks(late);

    const waitFor = async (waiter: LockApp, held: number, name: string) => {
      const waiting = waiter.locks.tryLocks([`${name}_READ`], { waitMs: 10_000 });
      const appId = waiter === holder ? 'holder' : 'other';
      await until(async () => (await db.query('SELECT 1 FROM locking_waiters WHERE app_id = $1', [appId])).length > 0);
      return { waiting, held };
    };
    // A waiter of the releasing instance: no doorbell to name (its own), no result set; woken in-process.
    releases.length = 0;
    const own = await waitFor(holder, await holder.locks.tryLocks(['QB_WRITE']), 'QB');
    let releasedAt = performance.now();
    await holder.locks.releaseLocks(own.held);
    await holder.locks.releaseLocks(await own.waiting);
    expect(performance.now() - releasedAt).toBeLessThan(150); // the poll would take 20 s
    expect(releases[0]).toMatchObject({ sql: 'CALL locking_release_quiet(?, ?)', rows: false });
    // A waiter of another instance: the release names its doorbell (a result set), and rings it.
    releases.length = 0;
    const theirs = await waitFor(other, await holder.locks.tryLocks(['QC_WRITE']), 'QC');
    await until(async () => (await db.query(`SELECT 1 FROM locking_doorbells WHERE app_id = 'other'`)).length > 0);
    releasedAt = performance.now();
    await holder.locks.releaseLocks(theirs.held);
    await other.locks.releaseLocks(await theirs.waiting);
    expect(performance.now() - releasedAt).toBeLessThan(150);
    expect(releases[0]).toMatchObject({ sql: 'CALL locking_release_quiet(?, ?)', rows: true });
    // Both at once, on one name.
    const held = await holder.locks.tryLocks(['QD_WRITE']);
    const mine = await waitFor(holder, held, 'QD');
    const yours = await waitFor(other, held, 'QD');
    releasedAt = performance.now();
    await holder.locks.releaseLocks(held);
    const [a, b] = await Promise.all([mine.waiting, yours.waiting]);
    expect(performance.now() - releasedAt).toBeLessThan(150);
    await holder.locks.releaseLocks(a);
    await other.locks.releaseLocks(b);
  });

  it('releases with locking_release a stamp whose names it does not know, and on a database before the migration', async () => {
    const old = await createMysqlTestDatabase({ migrate: false });
    try {
      const dataSource = new DataSource({
        type: 'mariadb',
        url: old.url,
        // Without the hand-over too: it installs the quiet release's next version (a database migrated in order
        // never has the one without the other).
        migrations: LOCK_MIGRATIONS.filter((m) => m !== MysqlQuietRelease1797000000000 && m !== LockHandOver1797300000000),
      });
      await dataSource.initialize();
      await dataSource.runMigrations();
      await dataSource.destroy();
      const app = await apps.start(old.url, { appId: 'previous', ...WAITER });
      const releases = watchReleases(app);
      const held = await app.locks.tryLocks(['OLD_WRITE']);
      const waiting = app.locks.tryLocks(['OLD_WRITE'], { waitMs: 10_000 });
      await until(async () => (await old.query('SELECT 1 FROM locking_waiters')).length > 0);
      const releasedAt = performance.now();
      await app.locks.releaseLocks(held);
      await app.locks.releaseLocks(await waiting);
      expect(performance.now() - releasedAt).toBeLessThan(150);
      expect(releases.map((release) => release.sql)).toEqual(['CALL locking_release(?, ?)', 'CALL locking_release(?, ?)']);
    } finally {
      await apps.closeAll();
      await old.drop();
    }
    // A stamp this store did not grant (names unknown): the release asks for them.
    const app = await apps.start(db.url, { appId: 'unknown', ...WAITER });
    const store = app.app.get(LockStore) as MysqlLockStore;
    const releases = watchReleases(app);
    const stamp = await app.locks.tryLocks(['UNKNOWN_WRITE']);
    store.releases.forgetAll();
    const waiting = app.locks.tryLocks(['UNKNOWN_WRITE'], { waitMs: 10_000 });
    await until(async () => (await db.query(`SELECT 1 FROM locking_waiters WHERE app_id = 'unknown'`)).length > 0);
    const releasedAt = performance.now();
    await app.locks.releaseLocks(stamp);
    await app.locks.releaseLocks(await waiting);
    expect(performance.now() - releasedAt).toBeLessThan(150);
    expect(releases[0]?.sql).toBe('CALL locking_release(?, ?)');
    expect(releases[1]?.sql).toBe('CALL locking_release_quiet(?, ?)');
  });
});
