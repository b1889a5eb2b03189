import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { LockAdminService, LockFence, LockLostError, type LockTransactionRunner } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { doorbellTiming } from '../../lib/store/mysql/mysql-doorbell.session.js';
import { pollTiming } from '../../lib/store/mysql/mysql-sessions.util.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { createGaleraDatabase, describeOnGalera, type GaleraDatabase } from './support/galera.js';

/** A waiter's instance: its own re-check far away, so that only a wake-up (a ring or a poll) ends a wait early. */
const WAITER = { waitRecheckMs: 60_000 };

describeOnGalera('Galera: a release wakes a waiter on another node (its doorbell), and a fenced commit rolled back is told', () => {
  const apps = trackApps(createLockApp);
  const saved = { ...pollTiming, ...doorbellTiming };
  let db: GaleraDatabase;

  beforeAll(async () => {
    db = await createGaleraDatabase();
  });
  afterEach(async () => {
    await apps.closeAll();
    Object.assign(pollTiming, { busyMs: saved.busyMs, idleMs: saved.idleMs });
    Object.assign(doorbellTiming, { lingerMs: saved.lingerMs });
  });
  afterAll(() => db?.drop());

  it('wakes the waiter of an instance on node 2 when an instance on node 1 releases, with the poll all but off', async () => {
    // The poll at 20 s: a wait that ends within a second was woken by its doorbell, rung across the nodes.
    Object.assign(pollTiming, { busyMs: 20_000, idleMs: 20_000 });
    const holder = await apps.start(db.urls[0]!, { appId: 'bell-holder' });
    const waiter = await apps.start(db.urls[1]!, { appId: 'bell-waiter', ...WAITER });
    const latencies: number[] = [];
    for (let round = 0; round < 8; round++) {
      const held = await holder.locks.tryLocks(['CROSS_WRITE']);
      expect(held).toBeGreaterThan(0);
      const waiting = waiter.locks.tryLocks(['CROSS_WRITE'], { waitMs: 15_000 });
      // The waiter's row and its doorbell's rings row, locked by the sleeping doorbell, are there on node 1.
      await until(async () => (await db.queryOn(1, `SELECT 1 FROM locking_waiters WHERE app_id = 'bell-waiter'`)).length > 0);
      await until(async () => (await db.queryOn(1, `SELECT 1 FROM locking_doorbell_rings WHERE app_id = 'bell-waiter'`)).length > 0);
      await sleep(200); // the doorbell armed (its rings row locked) and asleep
      const releasedAt = performance.now();
      await holder.locks.releaseLocks(held);
      const stamp = await waiting;
      latencies.push(performance.now() - releasedAt);
      expect(stamp).toBeGreaterThan(held); // and its fencing token after the holder's
      await waiter.locks.releaseLocks(stamp);
    }
    // Every hand-off well under the poll (20 s) and the re-check (60 s): each was a ring.
    expect(Math.max(...latencies)).toBeLessThan(1500);
  });

  it('tells LockLostError, never an unknown outcome, when its fenced commit on node 2 is rolled back by a forced release on node 1', async () => {
    const app = await apps.start(db.urls[1]!, { appId: 'fenced-n2' });
    const fence = app.app.get(LockFence);
    await db.queryOn(1, 'CREATE TABLE IF NOT EXISTS ledger (id INT PRIMARY KEY, balance INT NOT NULL) ENGINE=InnoDB');
    await db.queryOn(1, 'INSERT INTO ledger VALUES (1, 0) ON DUPLICATE KEY UPDATE balance = 0');
    const stamp = await app.locks.tryLocks(['LEDGER_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    const admin = new DataSource({ type: 'mariadb', url: db.urls[0]!, timezone: 'Z' });
    await admin.initialize();
    const connection = await mysql.createConnection({ uri: db.urls[1]!, timezone: 'Z' });
    // A runner on node 2 that, once the work and the fence have run (not committed), lets node 1 force the grant
    // out before it sends COMMIT: the cluster certifies the forced release first and rolls this transaction back.
    const runner: LockTransactionRunner<mysql.Connection> = {
      async run(work) {
        await connection.query('START TRANSACTION');
        try {
          const value = await work(connection);
          await LockAdminService.create(admin, { actor: 'ops' }).forceRelease(stamp, 'node 1 takes it back');
          await sleep(300); // node 2 applies the forced release: its write set meets this transaction's
          await connection.query('COMMIT');
          return value;
        } catch (error) {
          await connection.query('ROLLBACK').catch(() => undefined);
          throw error;
        }
      },
      execute: (tx, statement) => tx.query(statement.sql, [...statement.params]),
    };
    try {
      const outcome = await fence
        .transaction(stamp, runner, (tx) => tx.query('UPDATE ledger SET balance = balance + 100 WHERE id = 1'))
        .then(
          () => 'committed',
          (error: unknown) => error,
        );
      expect(outcome).toBeInstanceOf(LockLostError);
      // Nothing was written on any node, and the holder was told.
      expect(await db.queryOn(1, 'SELECT balance FROM ledger WHERE id = 1')).toEqual([{ balance: 0 }]);
      expect(await db.queryOn(2, 'SELECT balance FROM ledger WHERE id = 1')).toEqual([{ balance: 0 }]);
      expect(app.locks.isHeld(stamp)).toBe(false);
    } finally {
      await connection.end();
      await admin.destroy();
    }
  });
});
