import {
  GrantNotFoundError,
  IllegalMonitorStateError,
  InvalidLockArgumentError,
  InvalidLockSpecError,
  LOCK_MIGRATIONS,
  LockAdminService,
  LockConfigurationError,
  LockLostError,
  LockStoreError,
} from 'nestjs-db-locks';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { dbNow, deadlockEvidence, openSession, sessionsWaitingForALock } from '../support/dialect-sql.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Resolves with the reason once `signal` fires. */
function aborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });
}

for (const dialect of DIALECTS) dialect.describe(`LockAdminService on ${dialect.name}`, () => {
  const { start, closeAll } = trackApps(createLockApp);
  let db: TestDatabase;
  let dataSource: DataSource;
  let admin: LockAdminService;
  const deadlocks = () => deadlockEvidence(db, dialect);
  /** The database's clock now (not the transaction's start). */
  const clock = async (): Promise<Date> => {
    const [row] = await db.query<{ now: string | Date }>(
      dialect.name === 'MariaDB'
        ? `SELECT DATE_FORMAT(UTC_TIMESTAMP(6), '%Y-%m-%dT%H:%i:%s.%fZ') AS now`
        : 'SELECT clock_timestamp() AS now',
    );
    return new Date(row!.now);
  };
  /** A DataSource of the script's own on `url` (not initialized). */
  const options = (url: string, more: Partial<DataSourceOptions> = {}): DataSourceOptions =>
    ({
      ...(dialect.name === 'MariaDB' ? { type: 'mariadb', timezone: 'Z' } : { type: 'postgres' }),
      url,
      ...more,
    }) as DataSourceOptions;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    dataSource = new DataSource(options(db.url, { extra: dialect.name === 'MariaDB' ? { connectionLimit: 3 } : { max: 3 } }));
    await dataSource.initialize();
    admin = LockAdminService.create(dataSource, { actor: 'alice@on-call' });
  });
  afterEach(async () => {
    await closeAll();
    await db.query('DELETE FROM locking');
    await db.query('DELETE FROM locking_log');
    await db.query('DELETE FROM locking_permissions');
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it("frees another app's live grant, audited; the holder learns it on its next renewal", async () => {
    const holder = await start(db.url, { appId: 'holder', leaseMs: 5000, renewIntervalMs: 100 });
    const stamp = await holder.locks.tryLocks(['STUCK_WRITE', 'SHARED_READ']);
    const other = await holder.locks.tryLocks(['OTHER_WRITE']);
    const lost = aborted(holder.locks.getSignal(stamp));

    const freed = await admin.forceRelease(stamp, 'job hung since 03:00, ticket OPS-1');
    expect(freed).toMatchObject({
      stamp,
      appId: 'holder',
      locks: [{ name: 'SHARED', mode: 'read' }, { name: 'STUCK', mode: 'write' }],
      forcedBy: 'alice@on-call',
      reason: 'job hung since 03:00, ticket OPS-1',
    });
    expect(freed.heldForMs).toBeGreaterThanOrEqual(0);
    expect(freed.instance).toBe((await db.query<{ instance: string }>('SELECT instance FROM locking_log WHERE stamp = $1', [stamp]))[0]!.instance);
    expect((await lockRows(db)).map((row) => Number(row.stamp))).toEqual([other]); // only that grant's rows went

    const reason = await lost; // the next renewal no longer finds it
    expect(reason).toBeInstanceOf(LockLostError);
    // The holder is told it was forced, by whom and why (not "reaped or recovered, or its lease ended").
    expect((reason as LockLostError).reason).toBe('its release was forced by alice@on-call: job hung since 03:00, ticket OPS-1');
    expect(holder.locks.isHeld(stamp)).toBe(false);
    expect(holder.locks.isHeld(other)).toBe(true); // the other grant is untouched
    await expect(
      dataSource.transaction((manager) => holder.locks.markBusinessDone(stamp, manager)),
    ).rejects.toBeInstanceOf(LockLostError);
    await expect(holder.locks.releaseLocks(stamp)).rejects.toBeInstanceOf(IllegalMonitorStateError);

    const [entry] = await admin.getLog({ stamp });
    expect(entry).toMatchObject({ stamp, status: 'FORCED', endedBy: 'alice@on-call', endReason: 'job hung since 03:00, ticket OPS-1' });
    expect(entry!.endedAt).toBeInstanceOf(Date);
    expect((await holder.locks.getLog()).find((row) => row.stamp === stamp)).toMatchObject({ status: 'FORCED', endedBy: 'alice@on-call' });
    expect((await holder.locks.getLog()).find((row) => row.stamp === other)).not.toHaveProperty('endedBy');

    // Refuses what is not live: a second forced release, a released grant, an unknown stamp.
    await expect(admin.forceRelease(stamp, 'again')).rejects.toBeInstanceOf(GrantNotFoundError);
    await holder.locks.releaseLocks(other);
    await expect(admin.forceRelease(other, 'released already')).rejects.toBeInstanceOf(GrantNotFoundError);
    await expect(admin.forceRelease(999_999_999, 'unknown')).rejects.toBeInstanceOf(GrantNotFoundError);
    expect((await admin.getLog({ stamp: other }))[0]).toMatchObject({ status: 'RELEASED' });
  });

  it('takes the log row before the lock rows: behind a reaper holding the log row it never deadlocks', async () => {
    const holder = await start(db.url, { appId: 'holder', reaperIntervalMs: 0 });
    const stamp = await holder.locks.tryLocks(['ORDER_WRITE', 'ORDER2_READ']);
    const before = await deadlocks();
    const reaper = await openSession(db, dialect);
    try {
      await reaper.query(dialect.name === 'MariaDB' ? 'SET SESSION innodb_lock_wait_timeout = 5' : `SET lock_timeout = '5s'`);
      await reaper.query('BEGIN');
      await reaper.query('SELECT stamp FROM locking_log WHERE stamp = $1 FOR UPDATE', [stamp]);
      const forced = admin.forceRelease(stamp, 'racing the reaper');
      forced.catch(() => undefined); // awaited below
      await until(async () => (await sessionsWaitingForALock(db, dialect)) > 0); // the forced release waits
      await reaper.query('DELETE FROM locking WHERE stamp = $1', [stamp]);
      await reaper.query(`UPDATE locking_log SET status = 'REAPED', ended = ${dbNow(dialect)} WHERE stamp = $1`, [stamp]);
      await reaper.query('COMMIT');
      await expect(forced).rejects.toBeInstanceOf(GrantNotFoundError); // the reaper ended it first
    } finally {
      await reaper.end();
    }
    expect(await deadlocks()).toBe(before);
    expect(await db.query('SELECT status FROM locking_log WHERE stamp = $1', [stamp])).toEqual([{ status: 'REAPED' }]);
  });

  it('a forced release that times out behind a business transaction says whether it may still take effect, truly', async () => {
    const holder = await start(db.url, { appId: 'holder', leaseMs: 5000, renewIntervalMs: 100, reaperIntervalMs: 0 });
    const stamp = await holder.locks.tryLocks(['BLOCKED_WRITE']);
    const lost = aborted(holder.locks.getSignal(stamp));
    const impatient = LockAdminService.create(dataSource, { actor: 'bob@on-call', queryTimeoutMs: 300 });
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    let fenced!: () => void;
    const fencedP = new Promise<void>((resolve) => (fenced = resolve));
    // The holder's business transaction has recorded "business done": it holds the grant's log row until it ends.
    const business = dataSource.transaction(async (manager) => {
      await holder.locks.markBusinessDone(stamp, manager);
      fenced();
      await committed;
    });
    await fencedP;
    const t0 = Date.now();
    const error = await impatient.forceRelease(stamp, 'stuck, ticket OPS-9').catch((e: unknown) => e);
    // It ends by its timeout (its retries included), not when the business transaction or the server gives up.
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(error).toBeInstanceOf(LockStoreError);
    const outcomeUnknown = (error as LockStoreError).outcomeUnknown;
    commit();
    await business;
    if (dialect.name === 'PostgreSQL') {
      // The statement was sent and still waited on the server: it commits once the business transaction ends.
      expect(outcomeUnknown).toBe(true);
      await until(async () => (await admin.getLog({ stamp }))[0]?.status === 'FORCED');
      expect((await admin.getLog({ stamp }))[0]).toMatchObject({ endedBy: 'bob@on-call', endReason: 'stuck, ticket OPS-9' });
      expect(await lockRows(db)).toEqual([]);
      expect(await lost).toBeInstanceOf(LockLostError);
    } else {
      // MariaDB's transaction never got to its COMMIT: the server rolled it back, and the grant stays its holder's.
      expect(outcomeUnknown).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await admin.getLog({ stamp }))[0]).toMatchObject({ status: 'BUSINESS_DONE' });
      expect((await lockRows(db)).map((row) => Number(row.stamp))).toEqual([stamp]);
      expect(holder.locks.isHeld(stamp)).toBe(true);
      await holder.locks.releaseLocks(stamp);
    }
  });

  it("races the holder's own release: exactly one of them ends each grant", async () => {
    const holder = await start(db.url, { appId: 'holder', reaperIntervalMs: 0 });
    const before = await deadlocks();
    for (let i = 0; i < 20; i++) {
      const stamp = await holder.locks.tryLocks([`RACE${i}_WRITE`, `RACE${i}B_READ`]);
      const [released, forced] = await Promise.allSettled([
        holder.locks.releaseLocks(stamp),
        admin.forceRelease(stamp, 'race'),
      ]);
      expect([released.status, forced.status].sort()).toEqual(['fulfilled', 'rejected']);
      if (released.status === 'rejected') expect(released.reason).toBeInstanceOf(IllegalMonitorStateError);
      if (forced.status === 'rejected') expect(forced.reason).toBeInstanceOf(GrantNotFoundError);
      const [row] = await db.query<{ status: string }>('SELECT status FROM locking_log WHERE stamp = $1', [stamp]);
      expect(row!.status).toBe(forced.status === 'fulfilled' ? 'FORCED' : 'RELEASED');
    }
    expect(await lockRows(db)).toEqual([]);
    expect(await deadlocks()).toBe(before);
  });

  it('wakes the waiters of the freed names at once', async () => {
    const holder = await start(db.url, { appId: 'holder' });
    // A long re-check: only a notification can wake the waiter in time.
    const waiter = await start(db.url, { appId: 'waiter', waitRecheckMs: 30_000 });
    const stamp = await holder.locks.tryLocks(['QUEUE_WRITE']);
    const began = Date.now();
    const waiting = waiter.locks.tryLocks(['QUEUE_WRITE'], { waitMs: 60_000 });
    await until(async () => (await admin.listWaiters({ name: 'QUEUE' })).length === 1);
    const [info] = await admin.listWaiters();
    expect(info).toMatchObject({ appId: 'waiter', locks: [{ name: 'QUEUE', mode: 'write' }] });
    expect(info!.waitingForMs).toBeGreaterThanOrEqual(0);
    expect(info!.expiresInMs).toBeGreaterThan(0); // the registration's heartbeat (3 re-checks), not the wait's end
    // The wait's own deadline: 60 s after it began, by the waiter's clock (the same machine here).
    expect(info!.givesUpAt!.getTime()).toBeGreaterThanOrEqual(began + 60_000);
    expect(info!.givesUpAt!.getTime()).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(info!.position).toBe(1); // the only waiter, whatever the sequence behind the waiting order says
    expect(await admin.listWaiters({ name: 'ELSEWHERE' })).toEqual([]);

    const freedAt = Date.now();
    await admin.forceRelease(stamp, 'holder is stuck');
    expect(await waiting).toBeGreaterThan(stamp);
    expect(Date.now() - freedAt).toBeLessThan(15_000);
    expect(await admin.listWaiters()).toEqual([]);
  });

  it('lists waiters in waiting order', async () => {
    const holder = await start(db.url, { appId: 'holder' });
    const waiter = await start(db.url, { appId: 'waiter' });
    const stamp = await holder.locks.tryLocks(['ORDER_WRITE']);
    const controller = new AbortController();
    const first = waiter.locks.tryLocks(['ORDER_WRITE'], { waitMs: 60_000, signal: controller.signal });
    await until(async () => (await admin.listWaiters()).length === 1);
    const second = waiter.locks.tryLocks(['ORDER_READ', 'Z_READ'], { waitMs: 60_000, signal: controller.signal });
    await until(async () => (await admin.listWaiters()).length === 2);
    const waiters = await admin.listWaiters({ name: 'ORDER' });
    expect(waiters.map((w) => w.locks)).toEqual([
      [{ name: 'ORDER', mode: 'write' }],
      [{ name: 'ORDER', mode: 'read' }, { name: 'Z', mode: 'read' }],
    ]);
    expect(waiters.map((w) => w.position)).toEqual([1, 2]);
    expect(await admin.listWaiters({ name: 'Z' })).toMatchObject([{ position: 1 }]);
    controller.abort();
    await Promise.allSettled([first, second]);
    await holder.locks.releaseLocks(stamp);
  });

  it('filters grants by name and app id, in LockService too', async () => {
    const one = await start(db.url, { appId: 'one' });
    const two = await start(db.url, { appId: 'two' });
    await admin.setPermits('B', 'read', 2);
    const a = await one.locks.tryLocks(['A_WRITE', 'B_READ']);
    const b = await two.locks.tryLocks(['B_READ', 'C_WRITE']);
    const stamps = (grants: Array<{ stamp: number }>) => grants.map((grant) => grant.stamp);
    expect(stamps(await admin.getGrants())).toEqual([a, b]);
    expect(stamps(await admin.getGrants({ name: 'A' }))).toEqual([a]);
    expect(stamps(await admin.getGrants({ name: 'B' }))).toEqual([a, b]);
    expect(stamps(await admin.getGrants({ appId: 'two' }))).toEqual([b]);
    expect(stamps(await admin.getGrants({ name: 'A', appId: 'two' }))).toEqual([]);
    expect(stamps(await one.locks.getGrants({ name: 'C' }))).toEqual([b]);
    expect(stamps(await one.locks.getGrants({ appId: 'one' }))).toEqual([a]);
    expect(stamps(await one.locks.getGrants())).toEqual([a, b]);
  });

  it('reads the log by time, name and stamp, newest first', async () => {
    const app = await start(db.url, { appId: 'logger' });
    const first = await app.locks.tryLocks(['LOG_A_WRITE']);
    await app.locks.releaseLocks(first);
    const between = await clock();
    const second = await app.locks.tryLocks(['LOG_B_WRITE']);
    const third = await app.locks.tryLocks(['LOG_A_READ']);
    const stamps = (entries: Array<{ stamp: number }>) => entries.map((entry) => entry.stamp);
    expect(stamps(await admin.getLog())).toEqual([third, second, first]);
    expect(stamps(await admin.getLog({ limit: 2 }))).toEqual([third, second]);
    expect(stamps(await admin.getLog({ since: between }))).toEqual([third, second]);
    expect(stamps(await admin.getLog({ name: 'LOG_A' }))).toEqual([third, first]);
    expect(stamps(await admin.getLog({ name: 'LOG_A', since: between }))).toEqual([third]);
    expect(stamps(await admin.getLog({ stamp: second }))).toEqual([second]);
    // A grant acquired before `since` and ended after it is in: the log shows what happened since.
    await app.locks.releaseLocks(second);
    const later = await clock();
    await app.locks.releaseLocks(third);
    expect(stamps(await admin.getLog({ since: later }))).toEqual([third]);
  });

  it('reads and writes permits', async () => {
    const app = await start(db.url, { appId: 'permits' });
    await admin.setPermits('POOL', 'read', 3);
    await admin.setPermits('POOL', 'write', 2);
    expect(await admin.getPermits()).toEqual(
      expect.arrayContaining([
        { name: 'POOL', mode: 'read', permits: 3 },
        { name: 'POOL', mode: 'write', permits: 2 },
      ]),
    );
    // Grants obey the committed permits at once.
    expect(await app.locks.tryLocks(['POOL_WRITE'])).toBeGreaterThan(0);
    expect(await app.locks.tryLocks(['POOL_WRITE'])).toBeGreaterThan(0);
    expect(await app.locks.tryLocks(['POOL_WRITE'])).toBe(0);
    await admin.setPermits('POOL', 'write', null);
    expect(await admin.getPermits()).toEqual([{ name: 'POOL', mode: 'read', permits: 3 }]);
  });

  it('reports the schema status from the migrations table', async () => {
    const names = LOCK_MIGRATIONS.map((migration) => migration.name);
    expect(await admin.getSchemaStatus()).toEqual({ applied: names, pending: [], tablesPresent: true });

    const empty = await dialect.createDatabase({ migrate: false });
    const partial = new DataSource(options(empty.url, { migrations: [...LOCK_MIGRATIONS] }));
    await partial.initialize();
    try {
      const emptyAdmin = LockAdminService.create(partial);
      expect(await emptyAdmin.getSchemaStatus()).toEqual({ applied: [], pending: names, tablesPresent: false });
      await partial.runMigrations();
      await partial.undoLastMigration();
      expect(await emptyAdmin.getSchemaStatus()).toEqual({
        applied: names.slice(0, -1),
        pending: names.slice(-1),
        tablesPresent: true,
      });
    } finally {
      await partial.destroy();
      await empty.drop();
    }
  });

  it('is provided by LockModule, acting as the instance', async () => {
    const app = await start(db.url, { appId: 'module', instance: 'pod-7' });
    const moduleAdmin = app.app.get(LockAdminService);
    expect(moduleAdmin.actor).toBe('pod-7');
    const stamp = await app.locks.tryLocks(['SELF_WRITE']);
    expect(await moduleAdmin.forceRelease(stamp, 'test')).toMatchObject({ forcedBy: 'pod-7', appId: 'module' });
  });

  it('validates every input before touching the database', async () => {
    // Never initialized: any statement would fail with LockConfigurationError.
    const offline = LockAdminService.create(new DataSource(options(db.url)));
    for (const stamp of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1, '3' as unknown as number]) {
      await expect(offline.forceRelease(stamp, 'why')).rejects.toBeInstanceOf(InvalidLockArgumentError);
    }
    for (const reason of ['', '   ', 'x'.repeat(501), undefined as unknown as string]) {
      await expect(offline.forceRelease(1, reason)).rejects.toBeInstanceOf(InvalidLockArgumentError);
    }
    await expect(offline.forceRelease(1, 'x'.repeat(500))).rejects.toBeInstanceOf(LockConfigurationError); // valid
    expect(() => offline.listWaiters({ name: 'bad name\n' })).toThrow(InvalidLockSpecError);
    expect(() => offline.getGrants({ name: '' })).toThrow(InvalidLockSpecError);
    expect(() => offline.getGrants({ appId: 'bad app' })).toThrow(InvalidLockArgumentError);
    expect(() => offline.getGrants(null as unknown as object)).toThrow(InvalidLockArgumentError);
    expect(() => offline.getLog({ limit: 0 })).toThrow(InvalidLockArgumentError);
    expect(() => offline.getLog({ limit: 10_001 })).toThrow(InvalidLockArgumentError);
    expect(() => offline.getLog({ since: new Date('nope') })).toThrow(InvalidLockArgumentError);
    expect(() => offline.getLog({ since: '2026-01-01' as unknown as Date })).toThrow(InvalidLockArgumentError);
    expect(() => offline.getLog({ stamp: 0 })).toThrow(InvalidLockArgumentError);
    expect(() => offline.getLog({ name: 'bad name\n' })).toThrow(InvalidLockSpecError);
    await expect(offline.setPermits('bad name\n', 'read', 1)).rejects.toBeInstanceOf(InvalidLockSpecError);
    await expect(offline.setPermits('OK', 'both' as 'read', 1)).rejects.toBeInstanceOf(InvalidLockArgumentError);
    await expect(offline.setPermits('OK', 'read', 0)).rejects.toBeInstanceOf(InvalidLockArgumentError);
    expect(() => LockAdminService.create(dataSource, { actor: '' })).toThrow(LockConfigurationError);
    expect(() => LockAdminService.create(dataSource, { queryTimeoutMs: 5 })).toThrow(LockConfigurationError);
  });
});
