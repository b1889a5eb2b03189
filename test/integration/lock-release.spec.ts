import { IllegalMonitorStateError } from 'nestjs-db-locks';
import { createLockApp, type LockApp, useTwoInstances } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import { msUntil } from '../support/dialect-sql.js';
import type { TestDatabase } from '../support/test-database.js';

for (const dialect of DIALECTS) dialect.describe(`groups, stamps and release on ${dialect.name}`, () => {
  const suite = useTwoInstances(dialect.createDatabase);
  afterEach(() => suite.db.query('DELETE FROM locking'));

  it('grants a group whole, with one stamp on every row', async () => {
    const stamp = await suite.one.locks.tryLocks(['WS2_WRITE', 'WS1_READ']);
    expect(Number.isSafeInteger(stamp) && stamp > 0).toBe(true);
    expect(await lockRows(suite.db)).toEqual([
      { lock_name: 'WS1', mode: 'R', app_id: 'one', stamp: String(stamp) },
      { lock_name: 'WS2', mode: 'W', app_id: 'one', stamp: String(stamp) },
    ]);
    const [row] = await suite.db.query<{ left_ms: unknown }>(`SELECT ${msUntil(dialect, 'max(created)')} AS left_ms FROM locking`);
    const age = -Number(row!.left_ms) / 1000;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(60);
  });

  it('refuses a group when one lock is taken, and leaves no row behind', async () => {
    const held = await suite.two.locks.tryLocks(['X_WRITE']);
    expect(await suite.one.locks.tryLocks(['W_WRITE', 'X_READ', 'Y_WRITE'])).toBe(0);
    expect(await lockRows(suite.db)).toEqual([{ lock_name: 'X', mode: 'W', app_id: 'two', stamp: String(held) }]);
    // The other members of the refused group are free.
    expect(await suite.two.locks.tryLocks(['W_WRITE', 'Y_WRITE'])).toBeGreaterThan(0);
  });

  it('hands out distinct, increasing stamps', async () => {
    const stamps: number[] = [];
    for (let i = 0; i < 50; i++) {
      const stamp = await suite.one.locks.tryLocks([`S${i}_WRITE`]);
      stamps.push(stamp);
    }
    expect(new Set(stamps).size).toBe(50);
    expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
  });

  it('throws IllegalMonitorStateError for an unknown stamp', async () => {
    await expect(suite.one.locks.releaseLocks(987_654_321)).rejects.toThrow(IllegalMonitorStateError);
  });

  it('only the holder releases: a foreign release throws and the lock stays held', async () => {
    const stamp = await suite.one.locks.tryLocks(['A_WRITE']);
    const error = await suite.two.locks.releaseLocks(stamp).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IllegalMonitorStateError);
    expect(error).toMatchObject({ stamp, appId: 'two' });
    expect(await suite.two.locks.tryLocks(['A_WRITE'])).toBe(0);
    await suite.one.locks.releaseLocks(stamp);
    expect(await suite.two.locks.tryLocks(['A_WRITE'])).toBeGreaterThan(0);
  });

  it('a second release of the same stamp throws', async () => {
    const stamp = await suite.one.locks.tryLocks(['A_WRITE', 'B_READ']);
    await suite.one.locks.releaseLocks(stamp);
    await expect(suite.one.locks.releaseLocks(stamp)).rejects.toThrow(IllegalMonitorStateError);
    expect(await lockRows(suite.db)).toEqual([]);
  });

  it('releaseAllLocks frees every group of this app only', async () => {
    await suite.one.locks.tryLocks(['A_WRITE']);
    await suite.one.locks.tryLocks(['B_WRITE', 'C_READ']);
    const theirs = await suite.two.locks.tryLocks(['D_WRITE']);
    expect(await suite.one.locks.releaseAllLocks()).toBe(3);
    expect(await lockRows(suite.db)).toEqual([{ lock_name: 'D', mode: 'W', app_id: 'two', stamp: String(theirs) }]);
    expect(suite.one.locks.getStats()).toMatchObject({ retries: 0 });
  });

  it('frees the locks of a crashed instance when it starts again with the same appId', async () => {
    const doomed = await createLockApp(suite.db.url, { appId: 'crashy' });
    const stamp = await doomed.locks.tryLocks(['JOB_WRITE', 'WS1_READ']);
    expect(stamp).toBeGreaterThan(0);
    // A kill -9: the process is gone without releasing; its rows stay.
    await doomed.close();
    expect(await suite.two.locks.tryLocks(['JOB_WRITE'])).toBe(0);

    const restarted = await createLockApp(suite.db.url, { appId: 'crashy' });
    try {
      expect(await lockRows(suite.db)).toEqual([]);
      expect(await suite.two.locks.tryLocks(['JOB_WRITE'])).toBeGreaterThan(0);
    } finally {
      await restarted.close();
    }
  });

  it('keeps the leftovers when releaseOnStartup is false', async () => {
    const first = await createLockApp(suite.db.url, { appId: 'keeper' });
    await first.locks.tryLocks(['K_WRITE']);
    await first.close();
    const second = await createLockApp(suite.db.url, { appId: 'keeper', releaseOnStartup: false });
    try {
      expect((await lockRows(suite.db)).map((r) => r.app_id)).toEqual(['keeper']);
      expect(await second.locks.releaseAllLocks()).toBe(1);
    } finally {
      await second.close();
    }
  });
});

for (const dialect of DIALECTS) dialect.describe(`concurrent calls of one instance (coalesced into batches) on ${dialect.name}`, () => {
  let db: TestDatabase;
  let app: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    app = await createLockApp(db.url, { appId: 'busy' });
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('grants a contended write lock to exactly one of 40 concurrent callers', async () => {
    const stamps = await Promise.all(Array.from({ length: 40 }, () => app.locks.tryLocks(['HOT_WRITE', 'COLD_READ'])));
    const granted = stamps.filter((s) => s > 0);
    expect(granted).toHaveLength(1);
    expect(await lockRows(db)).toHaveLength(2);
    await app.locks.releaseLocks(granted[0]!);
  });

  it('grants distinct groups concurrently, each with its own stamp', async () => {
    const stamps = await Promise.all(Array.from({ length: 40 }, (_, i) => app.locks.tryLocks([`G${i}_WRITE`])));
    expect(stamps.every((s) => s > 0)).toBe(true);
    expect(new Set(stamps).size).toBe(40);
    await Promise.all(stamps.map((s) => app.locks.releaseLocks(s)));
    expect(await lockRows(db)).toEqual([]);
  });

  it('lets exactly one of 20 concurrent releases of one stamp succeed', async () => {
    const stamp = await app.locks.tryLocks(['ONCE_WRITE']);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => app.locks.releaseLocks(stamp)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(failures).toHaveLength(19);
    expect(failures.every((r) => r.reason instanceof IllegalMonitorStateError)).toBe(true);
  });

  it('a foreign stamp in a batch of releases is refused and stays held (the batch function filters by app)', async () => {
    const foreign = await createLockApp(db.url, { appId: 'foreign' });
    try {
      const theirs = await foreign.locks.tryLocks(['THEIRS_WRITE']);
      const ours = await Promise.all(['B1', 'B2', 'B3', 'B4'].map((name) => app.locks.tryLocks([`${name}_WRITE`])));
      // Two batches go at once; the calls after them leave together in one batch of the batch function.
      const results = await Promise.allSettled([
        app.locks.releaseLocks(ours[0]!),
        app.locks.releaseLocks(ours[1]!),
        app.locks.releaseLocks(ours[2]!),
        app.locks.releaseLocks(theirs),
        app.locks.releaseLocks(ours[3]!),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(IllegalMonitorStateError);
      expect(await lockRows(db)).toEqual([{ lock_name: 'THEIRS', mode: 'W', app_id: 'foreign', stamp: String(theirs) }]);
      expect(foreign.locks.isHeld(theirs)).toBe(true);
      await foreign.locks.releaseLocks(theirs);
    } finally {
      await foreign.close();
    }
  });
});
