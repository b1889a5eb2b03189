import type pg from 'pg';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { until } from '../support/until.js';
import { connectClient, createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** Deadlocks PostgreSQL has detected in the test database so far. */
async function deadlocks(db: TestDatabase): Promise<number> {
  const [row] = await db.query<{ n: string }>(
    'SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(row?.n);
}

describe('release and reaper take rows in one order', () => {
  let db: TestDatabase;
  let app: LockApp;
  let reaper: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await createLockApp(db.url, { appId: 'ordered', reaperIntervalMs: 0 });
    reaper = await connectClient(db.url);
  });
  afterAll(async () => {
    await reaper.end();
    await app.close();
    await db.drop();
  });

  // The reaper locks the log row (FOR UPDATE), then deletes the lock rows. A release that deleted the lock rows first
  // and then waited for the log row closed a cycle: PostgreSQL broke it after deadlock_timeout with a 40P01.
  it('a release blocked behind a reaper that holds the log row never deadlocks with it', async () => {
    const stamp = await app.locks.tryLocks(['ORDER_WRITE', 'ORDER2_READ']);
    const before = await deadlocks(db);
    await reaper.query('BEGIN');
    await reaper.query('SELECT stamp FROM locking_log WHERE stamp = $1 FOR UPDATE', [stamp]);
    const release = app.locks.releaseLocks(stamp);
    // The release is now waiting for a row lock (and, before the fix, already held the lock rows).
    await until(async () => {
      const waiting = await db.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return waiting.length > 0;
    });
    await reaper.query(`SET LOCAL lock_timeout = '5s'`);
    await reaper.query('DELETE FROM locking WHERE stamp = $1', [stamp]);
    await reaper.query('COMMIT');
    await release;
    expect(await deadlocks(db)).toBe(before);
    expect(await lockRows(db)).toEqual([]);
    expect(await db.query('SELECT status FROM locking_log WHERE stamp = $1', [stamp])).toEqual([{ status: 'RELEASED' }]);
  });
});
