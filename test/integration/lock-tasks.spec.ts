import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { connectClient, createTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('periodic tasks', () => {
  let db: TestDatabase;
  let app: LockApp | undefined;
  let blocker: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    blocker = await connectClient(db.url);
  });
  afterAll(async () => {
    await app?.close();
    await blocker.end();
    await db.drop();
  });

  /** Backends of the test database waiting for a lock (the blocker holds it, and does not wait). */
  async function backendsWaiting(): Promise<number> {
    const rows = await db.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    return rows.length;
  }

  it('never run a task again while its previous run is still going', async () => {
    app = await createLockApp(db.url, { appId: 'slow-db', renewIntervalMs: 20, reaperIntervalMs: 0 }, 8);
    const stamp = await app.locks.tryLocks(['SLOW_WRITE']);
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE locking_log IN ACCESS EXCLUSIVE MODE'); // the renewal now waits for it
    try {
      await until(async () => (await backendsWaiting()) === 1);
      await sleep(500); // 25 more ticks of the renewal task: none may start while the first one waits
      expect(await backendsWaiting()).toBe(1);
    } finally {
      await blocker.query('COMMIT');
    }
    await until(async () => (await backendsWaiting()) === 0);
    await app.locks.releaseLocks(stamp);
  });
});
