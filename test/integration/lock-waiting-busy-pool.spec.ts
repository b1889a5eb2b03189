import { LockShutdownError, LockWaitAbortedError } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, trackApps, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** How long the application's own queries keep the pool's connections: far longer than any bound below. */
const APP_QUERY_S = 8;
/** A generous bound on how late a wait may settle after its deadline, its abort or `close()` on a loaded machine. */
const LATE_MS = 1500;

for (const dialect of DIALECTS) dialect.describe(`waits on a pool kept busy by the application, on ${dialect.name}`, () => {
  const { start, closeAll } = trackApps(createLockApp);
  let db: TestDatabase;
  let holder: LockApp;
  let stamp: number;
  const sleep = dialect.name === 'MariaDB' ? `SELECT SLEEP(${APP_QUERY_S}) AS slept` : `SELECT pg_sleep(${APP_QUERY_S}) AS slept`;
  /** Sessions running the application's long queries now. */
  const sleeping = async (): Promise<number> => {
    const rows = await db.query<{ n: unknown }>(
      dialect.name === 'MariaDB'
        ? `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(%'`
        : `SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(%' AND state = 'active'`,
    );
    return Number(rows[0]?.n ?? 0);
  };
  /** Ends the long queries (the test is over with them). */
  const endSleeps = async (): Promise<void> => {
    if (dialect.name === 'MariaDB') {
      const rows = await db.query<{ id: unknown }>(`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(%'`);
      for (const row of rows) await db.query(`KILL QUERY ${Number(row.id)}`).catch(() => undefined);
    } else {
      await db.query(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(%' AND pid <> pg_backend_pid()`);
    }
  };
  /** A waiting instance with a pool of 3, two of whose connections run the application's long queries. */
  const busyWaiter = async (tracked = true, waitRecheckMs = 100): Promise<{ waiter: LockApp; queries: Promise<unknown> }> => {
    const waiter = await (tracked ? start : createLockApp)(db.url, { appId: 'waiter', waitRecheckMs }, 3);
    const dataSource = waiter.app.get(DataSource);
    const queries = Promise.allSettled([dataSource.query(sleep), dataSource.query(sleep)]);
    await until(async () => (await sleeping()) === 2);
    return { waiter, queries };
  };

  beforeAll(async () => {
    db = await dialect.createDatabase();
    holder = await createLockApp(db.url, { appId: 'holder' });
    stamp = await holder.locks.tryLocks(['BUSY_WRITE']);
  });
  afterEach(async () => {
    await endSleeps();
    await closeAll();
  });
  afterAll(async () => {
    await holder?.locks.releaseLocks(stamp).catch(() => undefined);
    await holder?.close();
    await db?.drop();
  });

  it('a wait ends by its deadline (0, not granted)', async () => {
    const { waiter, queries } = await busyWaiter();
    const started = Date.now();
    await expect(waiter.locks.tryLocks(['BUSY_WRITE'], { waitMs: 300 })).resolves.toBe(0);
    expect(Date.now() - started).toBeLessThan(300 + LATE_MS);
    await endSleeps();
    await queries;
  });

  it('a wait ends when its signal aborts it', async () => {
    const { waiter, queries } = await busyWaiter();
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('the client went away')), 500);
    await expect(waiter.locks.tryLocks(['BUSY_WRITE'], { waitMs: 60_000, signal: controller.signal })).rejects.toBeInstanceOf(
      LockWaitAbortedError,
    );
    expect(Date.now() - started).toBeLessThan(500 + LATE_MS);
    await endSleeps();
    await queries;
  });

  it('close() ends a wait at once, and the connection that arrives late is not leaked', async () => {
    const { waiter, queries } = await busyWaiter(false); // closed by the test
    const waiting = waiter.locks.tryLocks(['BUSY_WRITE'], { waitMs: 60_000 }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // When the lock module's shutdown is over, TypeORM ends the pool, which waits for the application's own queries:
    // that part is not the lock module's to shorten.
    const dataSource = waiter.app.get(DataSource);
    const destroy = dataSource.destroy.bind(dataSource);
    let destroyedAt = Infinity;
    dataSource.destroy = () => {
      destroyedAt = Date.now();
      return destroy();
    };
    const started = Date.now();
    const closing = waiter.close();
    expect(await waiting).toBeInstanceOf(LockShutdownError);
    await until(() => destroyedAt < Infinity, LATE_MS + 1000);
    expect(destroyedAt - started).toBeLessThan(LATE_MS);
    await endSleeps();
    await closing;
    await queries;
    if (dialect.name === 'PostgreSQL') {
      // The listening connection asked for before the shutdown is closed when it comes, not left open.
      const listening = async () =>
        Number((await db.query<{ n: unknown }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN %'`))[0]?.n);
      await until(async () => (await listening()) === 0);
    }
  });

  it('a long wait is not held up by the pool: it gets the lock soon after its release, on its re-check timer', async () => {
    // PostgreSQL: the attempts go on the instance's own session while the pool is busy. MariaDB's need the pool.
    if (dialect.name === 'MariaDB') return;
    const { waiter, queries } = await busyWaiter();
    const waiting = waiter.locks.tryLocks(['BUSY_WRITE'], { waitMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const released = Date.now();
    await holder.locks.releaseLocks(stamp);
    const granted = await waiting;
    expect(granted).toBeGreaterThan(0);
    expect(Date.now() - released).toBeLessThan(LATE_MS);
    expect(await sleeping()).toBe(2); // the application's queries were still running
    await waiter.locks.releaseLocks(granted);
    stamp = await holder.locks.tryLocks(['BUSY_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    await endSleeps();
    await queries;
  });

  it('once the pool frees up, the next wait is woken by the release as usual', async () => {
    const { waiter, queries } = await busyWaiter(true, 30_000); // no re-check timer within the test: a notification
    await expect(waiter.locks.tryLocks(['BUSY_WRITE'], { waitMs: 200 })).resolves.toBe(0);
    await endSleeps();
    await queries;
    const next = waiter.locks.tryLocks(['BUSY_WRITE'], { waitMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const released = Date.now();
    await holder.locks.releaseLocks(stamp);
    const granted = await next;
    expect(Date.now() - released).toBeLessThan(LATE_MS);
    expect(granted).toBeGreaterThan(0);
    await waiter.locks.releaseLocks(granted);
    stamp = await holder.locks.tryLocks(['BUSY_WRITE']);
    expect(stamp).toBeGreaterThan(0);
  });
});
