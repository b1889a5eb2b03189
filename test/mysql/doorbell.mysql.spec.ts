import mysql from 'mysql2/promise';
import { LOCK_MIGRATIONS, MysqlLockDoorbells1796500000000, LockHandOver1797300000000, MysqlQuietRelease1797000000000 } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { LockStore } from '../../lib/store/lock.store.js';
import { doorbellTiming } from '../../lib/store/mysql/mysql-doorbell.session.js';
import type { MysqlLockStore } from '../../lib/store/mysql/mysql-lock.store.js';
import { pollTiming } from '../../lib/store/mysql/mysql-sessions.util.js';
import { createLockApp, type LockApp, trackApps } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { canStartMariadb, type RestartableServer, startRestartableMariadb } from '../support/restartable-server.js';

/** The doorbells sleeping in the server now (their connection ids), of every database. */
const DOORBELL_THREADS = `SELECT ID AS id FROM information_schema.PROCESSLIST
  WHERE INFO LIKE 'SELECT /* nestjs-db-locks doorbell %' ORDER BY ID`;

const ringerOf = (app: LockApp) => (app.app.get(LockStore) as MysqlLockStore).ringer;

/** A waiter's instance: its own re-check far away, so that only a wake-up (ring or poll) ends a wait early. */
const WAITER = { waitRecheckMs: 60_000 };

describeOnMysql('MySQL/MariaDB: doorbells (a release wakes the waiters of other instances)', () => {
  const apps = trackApps(createLockApp);
  let db: TestDatabase;
  const saved = { ...pollTiming, ...doorbellTiming };
  const doorbellRow = async (appId: string) =>
    (await db.query<{ connection_id: string }>(`SELECT connection_id FROM locking_doorbells WHERE app_id = $1`, [appId]))[0];
  const sleepingDoorbells = async () =>
    (await db.query<{ id: string }>(DOORBELL_THREADS)).map((row) => Number(row.id));
  /** Until `appId` has a waiter row. */
  const waitingRow = (appId: string) =>
    until(async () => (await db.query(`SELECT 1 FROM locking_waiters WHERE app_id = $1`, [appId])).length > 0);
  /** Until `appId`'s doorbell sleeps in the server; its connection id. */
  const doorbellOf = async (appId: string): Promise<number> => {
    let id = 0;
    await until(async () => {
      const row = await doorbellRow(appId);
      id = Number(row?.connection_id ?? 0);
      return id > 0 && (await sleepingDoorbells()).includes(id);
    });
    return id;
  };

  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  beforeEach(() => {
    // The poll all but off: a wait that ends within tens of ms was woken by the doorbell.
    Object.assign(pollTiming, { busyMs: 20_000, idleMs: 20_000 });
    Object.assign(doorbellTiming, { lingerMs: 200 });
  });
  afterEach(async () => {
    await apps.closeAll();
    Object.assign(pollTiming, { busyMs: saved.busyMs, idleMs: saved.idleMs });
    Object.assign(doorbellTiming, { lingerMs: saved.lingerMs, retryMs: saved.retryMs });
    await db.query('DELETE FROM locking_waiters');
  });
  afterAll(() => db?.drop());

  it("wakes a waiter of another instance at once with the releaser's ring, then closes the doorbell (no leak)", async () => {
    const holder = await apps.start(db.url, { appId: 'holder' });
    const waiter = await apps.start(db.url, { appId: 'waiter', ...WAITER });
    for (let round = 0; round < 3; round++) {
      const held = await holder.locks.tryLocks(['BELL_WRITE']);
      const waiting = waiter.locks.tryLocks(['BELL_WRITE'], { waitMs: 10_000 });
      await waitingRow('waiter'); // (the doorbell stays open between rounds: the waiter must be waiting already)
      await doorbellOf('waiter');
      const releasedAt = performance.now();
      await holder.locks.releaseLocks(held);
      const stamp = await waiting;
      expect(stamp).toBeGreaterThan(0);
      expect(performance.now() - releasedAt).toBeLessThan(150); // the poll would take 20 s
      await waiter.locks.releaseLocks(stamp);
    }
    await until(() => ringerOf(holder).counts.rung >= 3); // counted once the KILL answered, after the wake-up
    expect(ringerOf(holder).counts).toMatchObject({ failed: 0, skipped: 0 });
    // No waiter left: the doorbell closes after its linger, at a poll (made short here, and brought on by a KILL
    // QUERY from outside: a spurious ring), and its row goes.
    Object.assign(pollTiming, { idleMs: 50, busyMs: 50 });
    await until(async () => {
      const sleeping = await sleepingDoorbells();
      for (const id of sleeping) await db.query(`KILL QUERY ${id}`).catch(() => undefined);
      return sleeping.length === 0 && (await doorbellRow('waiter')) === undefined;
    });
  });

  it('closes the doorbell at shutdown (no connection left behind)', async () => {
    const holder = await apps.start(db.url, { appId: 'holder' });
    const waiter = await apps.start(db.url, { appId: 'waiter', ...WAITER });
    const held = await holder.locks.tryLocks(['SHUT_WRITE']);
    const waiting = waiter.locks.tryLocks(['SHUT_WRITE'], { waitMs: 10_000 }).catch((error: unknown) => error);
    const id = await doorbellOf('waiter');
    await waiter.close();
    await waiting;
    await until(async () => !(await sleepingDoorbells()).includes(id));
    const threads = await db.query<{ id: string }>(`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID = $1`, [id]);
    expect(threads).toEqual([]);
    await holder.locks.releaseLocks(held);
  });

  it('never interrupts a thread that is not the doorbell a row names (a stale id, a forged row)', async () => {
    const holder = await apps.start(db.url, { appId: 'holder' });
    const bystander = await mysql.createConnection({ uri: db.url });
    try {
      const [[row]] = (await bystander.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
      // Rows of an instance gone (a server restarted since: its doorbell's id is another session's now).
      await db.query(`INSERT INTO locking_doorbells (app_id, connection_id, tag, opened) VALUES ('ghost', $1, 'aa11', UTC_TIMESTAMP(6))`, [row.id]);
      await db.query(`INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, registered)
        VALUES ('STALE', 'ghost-waiter', 'R', 'ghost', UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE, UTC_TIMESTAMP(6))`);
      // The ghost waits to read: the holder's reads do not yield to it (a write would, to any earlier waiter).
      for (const statement of ['SELECT SLEEP(2) AS slept', "SELECT /* nestjs-db-locks doorbell bb22 */ SLEEP(2) AS slept"]) {
        const started = performance.now();
        const sleeping = bystander.query(statement);
        await until(async () => (await db.query<{ id: string }>(`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID = $1 AND INFO LIKE 'SELECT%SLEEP%'`, [row.id])).length === 1);
        const before = { ...ringerOf(holder).counts };
        await holder.locks.releaseLocks(await holder.locks.tryLocks(['STALE_READ', 'STALE2_WRITE']));
        await holder.locks.releaseLocks(await holder.locks.tryLocks(['STALE_READ']));
        await until(() => ringerOf(holder).counts.skipped >= before.skipped + 2);
        const [[answer]] = (await sleeping) as unknown as [[{ slept: number }]];
        expect(Number(answer.slept)).toBe(0); // slept its whole time: never interrupted
        expect(performance.now() - started).toBeGreaterThan(1900);
        expect(ringerOf(holder).counts.rung).toBe(before.rung);
      }
    } finally {
      await bystander.end();
      await db.query(`DELETE FROM locking_doorbells WHERE app_id = 'ghost'`);
    }
  });

  it('reopens a doorbell killed from outside, and its waiters are woken by the new one', async () => {
    Object.assign(doorbellTiming, { retryMs: 50 });
    Object.assign(pollTiming, { busyMs: 300 }); // the poll reopens it (and would wake the waiter no sooner than 300 ms)
    const holder = await apps.start(db.url, { appId: 'holder' });
    const waiter = await apps.start(db.url, { appId: 'waiter', ...WAITER });
    const held = await holder.locks.tryLocks(['KILLED_WRITE']);
    const waiting = waiter.locks.tryLocks(['KILLED_WRITE'], { waitMs: 10_000 });
    const first = await doorbellOf('waiter');
    await db.query(`KILL CONNECTION ${first}`);
    await until(async () => Number((await doorbellRow('waiter'))?.connection_id ?? first) !== first);
    const second = await doorbellOf('waiter');
    expect(second).not.toBe(first);
    expect(await sleepingDoorbells()).not.toContain(first);
    const releasedAt = performance.now();
    await holder.locks.releaseLocks(held);
    await waiting;
    expect(performance.now() - releasedAt).toBeLessThan(150);
  });

  it('on a database before the doorbells migration: no doorbell, waiters of other instances poll as before', async () => {
    Object.assign(pollTiming, { busyMs: 20, idleMs: 250 });
    const old = await createMysqlTestDatabase({ migrate: false });
    try {
      // Without the quiet release and the hand-over too: their releases read the doorbells' table (a database
      // migrated in order never lacks it).
      const migrations = LOCK_MIGRATIONS.filter(
        (m) => m !== MysqlLockDoorbells1796500000000 && m !== MysqlQuietRelease1797000000000 && m !== LockHandOver1797300000000,
      );
      const dataSource = new DataSource({ type: 'mariadb', url: old.url, migrations });
      await dataSource.initialize();
      await dataSource.runMigrations();
      await dataSource.destroy();
      const holder = await apps.start(old.url, { appId: 'holder' });
      const waiter = await apps.start(old.url, { appId: 'waiter', ...WAITER });
      const held = await holder.locks.tryLocks(['OLD_WRITE']);
      const waiting = waiter.locks.tryLocks(['OLD_WRITE'], { waitMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const releasedAt = performance.now();
      await holder.locks.releaseLocks(held);
      expect(await waiting).toBeGreaterThan(0);
      expect(performance.now() - releasedAt).toBeLessThan(500);
      expect(ringerOf(holder).counts).toEqual({ rung: 0, failed: 0, skipped: 0 });
    } finally {
      await apps.closeAll();
      await old.drop();
    }
  });
});

// Privileges checked: a server of its own (the suite's skips the grant tables).
(canStartMariadb() ? describe : describe.skip)('MySQL/MariaDB: a doorbell ring refused', () => {
  const apps = trackApps(createLockApp);
  let server: RestartableServer;
  const saved = { ...pollTiming };
  beforeAll(async () => {
    server = await startRestartableMariadb(['--grant-tables']);
  });
  afterEach(async () => {
    await apps.closeAll();
    Object.assign(pollTiming, saved);
  });
  afterAll(() => server?.destroy());

  it('falls back to the poll when the KILL is refused (a releaser of another user without CONNECTION ADMIN)', async () => {
    const admin = await mysql.createConnection({ uri: server.url });
    const user = 'ndl_ringer';
    try {
      await admin.query(`CREATE USER '${user}'@'%' IDENTIFIED BY 'ringer'`);
      await admin.query(`GRANT ALL ON locks.* TO '${user}'@'%'`);
      await admin.query(`GRANT PROCESS ON *.* TO '${user}'@'%'`); // sees the doorbell, may not interrupt it
      const url = new URL(server.url);
      url.username = user;
      url.password = 'ringer';
      url.hostname = '127.0.0.1';
      Object.assign(pollTiming, { busyMs: 400 });
      const holder = await apps.start(url.toString(), { appId: 'holder' });
      const waiter = await apps.start(server.url, { appId: 'waiter', ...WAITER });
      const held = await holder.locks.tryLocks(['REFUSED_WRITE']);
      const waiting = waiter.locks.tryLocks(['REFUSED_WRITE'], { waitMs: 10_000 });
      await until(async () => ((await server.tryQuery<{ id: number }>(DOORBELL_THREADS)) ?? []).length === 1);
      const releasedAt = performance.now();
      await holder.locks.releaseLocks(held);
      expect(await waiting).toBeGreaterThan(0);
      const waited = performance.now() - releasedAt;
      expect(ringerOf(holder).counts.failed).toBeGreaterThanOrEqual(1); // 1095: not owner of the thread
      expect(ringerOf(holder).counts.rung).toBe(0);
      expect(waited).toBeGreaterThan(20);
      expect(waited).toBeLessThan(1000); // the poll's 400 ms at most, and the attempt
    } finally {
      await apps.closeAll();
      await admin.end();
    }
  });
});
