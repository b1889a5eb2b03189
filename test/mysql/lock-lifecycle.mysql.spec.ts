import { AppIdInUseError, LockAdminService, LockLostError, LockService } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { createLockApp, trackApps, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { recordCrashedHolder } from '../support/dead-process.js';
import { until } from '../support/until.js';

/** The log row of a grant. */
async function logRow(db: TestDatabase, stamp: number): Promise<{ status: string; lock_names: unknown } | undefined> {
  const [row] = await db.query<{ status: string; lock_names: unknown }>(
    'SELECT status, lock_names FROM locking_log WHERE stamp = $1',
    [stamp],
  );
  return row;
}

/** The rows a crashed instance `ghost` leaves for a write lock on `name`, with the lease ending at now `lease`. */
async function grantOfGhost(db: TestDatabase, stamp: number, name: string, lease: string): Promise<void> {
  await db.query(`INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, acquired, lease_expires)
    VALUES ($1, 'ghost', 'gone', $2, '["W"]', 'ACQUIRED', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) ${lease})`, [
    stamp,
    JSON.stringify([name]),
  ]);
  await db.query(`INSERT INTO locking VALUES ($1, 'W', 'ghost', $2, UTC_TIMESTAMP(6))`, [name, stamp]);
}

describeOnMysql('the lock engine on MySQL/MariaDB: grants, permits, waiting, leases, fencing, instance lock', () => {
  let db: TestDatabase;
  const apps = trackApps(createLockApp);
  let one: LockApp;
  let two: LockApp;

  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  beforeEach(async () => {
    one = await apps.start(db.url, { appId: 'one' });
    two = await apps.start(db.url, { appId: 'two', waitRecheckMs: 5000 });
  });
  afterEach(async () => {
    await apps.closeAll();
    await db.query('DELETE FROM locking');
    await db.query('DELETE FROM locking_permissions');
  });
  afterAll(() => db?.drop());

  it('grants a whole group or nothing, with stamps from the database that only grow', async () => {
    await db.query(`INSERT INTO locking_permissions VALUES ('B', 'R', 2)`);
    const first = await one.locks.tryLocks(['A_WRITE', 'B_READ']);
    expect(first).toBeGreaterThan(0);
    expect(await two.locks.tryLocks(['C_WRITE', 'A_READ'])).toBe(0); // A is write-held: nothing of the group
    expect((await lockRows(db)).map((r) => `${r.lock_name}:${r.mode}`)).toEqual(['A:W', 'B:R']);
    const second = await two.locks.tryLocks(['B_READ', 'C_WRITE']); // two readers may share B
    expect(second).toBeGreaterThan(first);
    expect(await logRow(db, first)).toMatchObject({ status: 'ACQUIRED' });
    await one.locks.releaseLocks(first);
    expect(await logRow(db, first)).toMatchObject({ status: 'RELEASED' });
    await two.locks.releaseLocks(second);
    expect(await lockRows(db)).toEqual([]);
  });

  it('obeys a permits row from its commit, read in the granting transaction', async () => {
    await db.query(`INSERT INTO locking_permissions VALUES ('P', 'R', 2)`);
    const a = await one.locks.tryLocks(['P_READ']);
    const b = await two.locks.tryLocks(['P_READ']);
    expect([a > 0, b > 0]).toEqual([true, true]);
    expect(await one.locks.tryLocks(['P_READ'])).toBe(0); // the third reader is refused
    await db.query(`UPDATE locking_permissions SET permits = 3 WHERE lock_name = 'P'`);
    expect(await one.locks.tryLocks(['P_READ'])).toBeGreaterThan(0);
  });

  it('names compare byte for byte: a name in another case is another lock', async () => {
    expect(await one.locks.tryLocks(['case_WRITE'])).toBeGreaterThan(0);
    expect(await two.locks.tryLocks(['CASE_WRITE'])).toBeGreaterThan(0);
  });

  it('hands a released group to a waiter of another instance, well before its re-check', async () => {
    const held = await one.locks.tryLocks(['H_WRITE']);
    const waiting = two.locks.tryLocks(['H_WRITE'], { waitMs: 10_000 });
    await until(async () => (await db.query('SELECT 1 FROM locking_waiters')).length === 1);
    const releasedAt = Date.now();
    await one.locks.releaseLocks(held);
    const stamp = await waiting;
    expect(stamp).toBeGreaterThan(held);
    expect(Date.now() - releasedAt).toBeLessThan(2500); // the re-check is 5 s away: the release handed it over
    // Its row stays, marked with the grant handed over, until that grant's release.
    expect(await db.query('SELECT granted FROM locking_waiters')).toEqual([{ granted: String(stamp) }]);
    await two.locks.releaseLocks(stamp);
    expect(await db.query('SELECT * FROM locking_waiters')).toEqual([]);
  });

  it('returns 0 at the deadline of a wait, and leaves no waiter row behind', async () => {
    await one.locks.tryLocks(['D_WRITE']);
    expect(await two.locks.tryLocks(['D_WRITE'], { waitMs: 300 })).toBe(0);
    expect(await db.query('SELECT * FROM locking_waiters')).toEqual([]);
  });

  it('a waiting writer makes later readers yield', async () => {
    const reader = await one.locks.tryLocks(['Y_READ']);
    const writer = two.locks.tryLocks(['Y_WRITE'], { waitMs: 10_000 });
    await until(async () => (await db.query('SELECT 1 FROM locking_waiters')).length === 1);
    expect(await one.locks.tryLocks(['Y_READ'])).toBe(0);
    await one.locks.releaseLocks(reader);
    expect(await writer).toBeGreaterThan(0);
  });

  it("reaps a grant whose lease ran out (its holder is gone), with any instance's reaper", async () => {
    const stamp = 800000;
    await grantOfGhost(db, stamp, 'R', '- INTERVAL 1 SECOND');
    expect(await two.locks.tryLocks(['R_WRITE'])).toBe(0);
    await apps.start(db.url, { appId: 'reaper', reaperIntervalMs: 200 });
    await until(async () => (await logRow(db, stamp))?.status === 'REAPED', 10_000);
    expect(await lockRows(db)).toEqual([]);
    expect(await two.locks.tryLocks(['R_WRITE'])).toBeGreaterThan(stamp);
  });

  it('fences the business transaction: markBusinessDone commits with it, and refuses a lost grant', async () => {
    const dataSource = one.app.get(DataSource);
    const stamp = await one.locks.tryLocks(['F_WRITE']);
    await dataSource.transaction(async (manager) => {
      await one.locks.markBusinessDone(stamp, manager);
    });
    expect(await logRow(db, stamp)).toMatchObject({ status: 'BUSINESS_DONE' });
    await one.app.get(LockAdminService).forceRelease(stamp, 'the test');
    expect(await logRow(db, stamp)).toMatchObject({ status: 'FORCED' });
    await expect(
      dataSource.transaction((manager) => one.locks.markBusinessDone(stamp, manager)),
    ).rejects.toBeInstanceOf(LockLostError);
  });

  it('a business transaction left open after markBusinessDone holds up no other grant', async () => {
    const dataSource = one.app.get(DataSource);
    const stamp = await one.locks.tryLocks(['OPEN_WRITE']);
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    let fenced: () => void = () => undefined;
    const fencedDone = new Promise<void>((resolve) => (fenced = resolve));
    // MySQL's default isolation (REPEATABLE READ), as a business transaction usually runs.
    const business = dataSource.transaction('REPEATABLE READ', async (manager) => {
      await one.locks.markBusinessDone(stamp, manager);
      fenced();
      await finished;
    });
    await fencedDone;
    try {
      // Newer stamps than the fenced grant's, on other names, from another instance: each must go through at once.
      for (let i = 0; i < 10; i++) {
        const started = Date.now();
        const other = await two.locks.tryLocks([`OPEN_OTHER_${i}_WRITE`]);
        expect(other).toBeGreaterThan(stamp);
        await two.locks.releaseLocks(other);
        expect(Date.now() - started).toBeLessThan(1000);
      }
    } finally {
      finish();
      await business;
    }
    expect(await logRow(db, stamp)).toMatchObject({ status: 'BUSINESS_DONE' });
    await one.locks.releaseLocks(stamp);
  });

  it('reports itself healthy: database reachable, schema current, app id held', async () => {
    const held = await one.locks.tryLocks(['HEALTH_WRITE']);
    expect(await one.locks.getHealth()).toMatchObject({
      healthy: true,
      appIdHeld: true,
      database: 'reachable',
      schema: 'current',
      grantsHeld: 1,
      problems: [],
    });
    await one.locks.releaseLocks(held);
  });

  it('refuses a second live instance of an app id while the first lives', async () => {
    await expect(createLockApp(db.url, { appId: 'one' })).rejects.toBeInstanceOf(AppIdInUseError);
    expect(await one.locks.tryLocks(['I_WRITE'])).toBeGreaterThan(0); // the first one is untouched
  });

  it('frees the grants a crashed instance left, when it starts again (RECOVERED)', async () => {
    // A crash of `ghost` while it held Z: its rows stay, with a lease still running.
    await grantOfGhost(db, 900000, 'Z', '+ INTERVAL 1 HOUR');
    await recordCrashedHolder(db, 'ghost'); // its process, on this machine, is gone
    expect(await one.locks.tryLocks(['Z_WRITE'])).toBe(0);
    const restarted = await apps.start(db.url, { appId: 'ghost' });
    expect(await logRow(db, 900000)).toMatchObject({ status: 'RECOVERED' });
    expect(await restarted.app.get(LockService).tryLocks(['Z_WRITE'])).toBeGreaterThan(900000);
  });
});
