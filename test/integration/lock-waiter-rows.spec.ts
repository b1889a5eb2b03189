import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { DIALECTS } from '../support/dialects.js';
import { dbNow, shifted } from '../support/dialect-sql.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** The waiter rows themselves: what an expired one does, how a long wait keeps its own, and the '*' wake-up. */
for (const dialect of DIALECTS) dialect.describe(`waiter rows on ${dialect.name}`, () => {
  let db: TestDatabase;
  let holder: LockApp;
  let waiter: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    holder = await createLockApp(db.url, { appId: 'holder' });
    // A short re-check: waiter rows live 3 × 100 ms and are refreshed while their waiter waits.
    waiter = await createLockApp(db.url, { appId: 'waiter', waitRecheckMs: 100 });
  });
  afterAll(async () => {
    await holder.close();
    await waiter.close();
    await db.drop();
  });

  it('an expired row of a dead writer holds no reader off', async () => {
    await db.query(`INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, registered)
                    VALUES ('GHOST', 'dead-writer', 'W', 'gone', ${shifted(dialect, dbNow(dialect), -1)}, ${dbNow(dialect)})`);
    const stamp = await holder.locks.tryLocks(['GHOST_READ']);
    expect(stamp).toBeGreaterThan(0);
    await holder.locks.releaseLocks(stamp);
    await db.query(`DELETE FROM locking_waiters WHERE waiter = 'dead-writer'`);
  });

  it('a long wait keeps its rows alive, so it keeps its place ahead of later readers', async () => {
    const held = await holder.locks.tryLocks(['LONG_READ']);
    const writing = waiter.locks.tryLocks(['LONG_WRITE'], { waitMs: 20_000 });
    await until(async () => (await db.query(`SELECT 1 FROM locking_waiters WHERE lock_name = 'LONG'`)).length === 1);
    const [first] = await db.query<{ expires: Date }>(`SELECT expires FROM locking_waiters WHERE lock_name = 'LONG'`);
    // Several lifetimes of a row (300 ms) later, the row is still there, refreshed: a new reader still yields to it.
    await until(async () => {
      const [row] = await db.query<{ expires: Date }>(`SELECT expires FROM locking_waiters WHERE lock_name = 'LONG'`);
      return row !== undefined && row.expires.getTime() > first!.expires.getTime() + 900;
    });
    expect(await holder.locks.tryLocks(['LONG_READ'])).toBe(0);
    await holder.locks.releaseLocks(held);
    const stamp = await writing;
    expect(stamp).toBeGreaterThan(0);
    await waiter.locks.releaseLocks(stamp);
  });

  it("wakes every waiter with '*' when the freed names do not fit in a notification", async () => {
    // Names of 200 characters: 40 of them are more than a notification's 7000 bytes, so the release sends '*'.
    const names = Array.from({ length: 40 }, (_, i) => `${String(i).padStart(2, '0')}${'N'.repeat(198)}`);
    const slow = await createLockApp(db.url, { appId: 'slow-waiter', waitRecheckMs: 10_000 });
    try {
      const held = await holder.locks.tryLocks(names.map((name) => `${name}_WRITE` as const));
      const waiting = slow.locks.tryLocks([`${names[39]}_WRITE` as const], { waitMs: 20_000 });
      await until(async () => (await db.query(`SELECT 1 FROM locking_waiters WHERE app_id = 'slow-waiter'`)).length === 1);
      // Its first attempt follows the registration at once; give it time to be refused and to go to sleep, so that
      // only a notification can wake it before the re-check (an attempt after the release would pass without one).
      await sleep(500);
      const releasedAt = Date.now();
      await holder.locks.releaseLocks(held);
      const stamp = await waiting;
      expect(stamp).toBeGreaterThan(0);
      expect(Date.now() - releasedAt).toBeLessThan(5000); // woken by '*', not by the re-check 10 s away
      await slow.locks.releaseLocks(stamp);
    } finally {
      await slow.close();
    }
  });
});
