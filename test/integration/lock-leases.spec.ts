import {
  AppIdInUseError,
  IllegalMonitorStateError,
  InvalidLockArgumentError,
  LockingLogEntity,
  LockLostError,
  LockService,
  MysqlLockingLogEntity,
  WithLocks,
} from 'nestjs-db-locks';
import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { LockReaper, PRUNE_BATCH_ROWS } from '../../lib/services/lock-reaper.service.js';
import { dbNow, expireLeases, logRowsOf, shifted } from '../support/dialect-sql.js';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { until } from '../support/until.js';
import type { TestDatabase } from '../support/test-database.js';

@Injectable()
class Payouts {
  constructor(private readonly locks: LockService) {}

  @WithLocks('PAYOUT_WRITE')
  async current(): Promise<{ stamp: number; aborted: boolean } | undefined> {
    const lock = this.locks.currentLock();
    return lock && { stamp: lock.stamp, aborted: lock.signal.aborted };
  }
}

/** Inserts `count` ended log rows two days old (stamps from 1,000,000,001), as a day's backlog. */
async function insertBacklog(db: TestDatabase, dialect: TestDialect, count: number): Promise<void> {
  const old = shifted(dialect, dbNow(dialect), -2 * 86_400);
  const columns = 'stamp, app_id, instance, lock_names, lock_modes, status, acquired, lease_expires, ended';
  if (dialect.name === 'PostgreSQL') {
    await db.query(
      `INSERT INTO locking_log (${columns})
       SELECT 1000000000 + i, 'gone', 'gone', ARRAY['OLD'], ARRAY['W']::char(1)[], 'RELEASED', ${old}, ${old}, ${old}
         FROM generate_series(1, $1) AS i`,
      [count],
    );
    return;
  }
  // 1 to 100,000 from five decimal digits (no generate_series, nor a recursion limit to raise).
  const digit = (alias: string) =>
    `(SELECT 0 AS d UNION ALL ${[1, 2, 3, 4, 5, 6, 7, 8, 9].map((d) => `SELECT ${d}`).join(' UNION ALL ')}) AS ${alias}`;
  await db.query(
    `INSERT INTO locking_log (${columns})
     SELECT 1000000000 + i, 'gone', 'gone', '["OLD"]', '["W"]', 'RELEASED', ${old}, ${old}, ${old}
       FROM (SELECT 1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS i
               FROM ${digit('a')}, ${digit('b')}, ${digit('c')}, ${digit('e')}, ${digit('f')}) AS n
      WHERE i <= $1`,
    [count],
  );
}

for (const dialect of DIALECTS) dialect.describe(`lock log, leases and the reaper on ${dialect.name}`, () => {
  let db: TestDatabase;
  const logRows = () => logRowsOf(db, dialect);
  const apps: LockApp[] = [];
  const start = async (...args: Parameters<typeof createLockApp>) => {
    const app = await createLockApp(...args);
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    db = await dialect.createDatabase();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await db.query('DELETE FROM locking');
    await db.query('DELETE FROM locking_log');
  });
  afterAll(() => db?.drop());

  it('logs every grant in the same transaction: ACQUIRED with its group and lease, then RELEASED', async () => {
    const app = await start(db.url, { appId: 'logger', leaseMs: 60_000 });
    const other = await start(db.url, { appId: 'other' });
    const stamp = await app.locks.tryLocks(['WS2_WRITE', 'WS1_READ']);
    expect(await other.locks.tryLocks(['WS2_READ', 'FREE_WRITE'])).toBe(0); // a refused group leaves no log row
    const [row] = await logRows();
    expect(await logRows()).toHaveLength(1);
    expect(row).toMatchObject({ stamp: String(stamp), app_id: 'logger', status: 'ACQUIRED', version: 1 });
    expect(row!.lock_names).toEqual(['WS1', 'WS2']);
    expect(row!.lock_modes).toEqual(['R', 'W']);
    expect(row!.lease_left_ms).toBeGreaterThan(55_000);
    expect(await app.locks.getGrants()).toMatchObject([
      { stamp, appId: 'logger', fencingToken: stamp, locks: [{ name: 'WS1', mode: 'read' }, { name: 'WS2', mode: 'write' }] },
    ]);
    await app.locks.releaseLocks(stamp);
    expect(await logRows()).toMatchObject([{ status: 'RELEASED', version: 2 }]);
    expect((await logRows())[0]!.ended).not.toBeNull();
    expect((await app.locks.getLog(5)).map((e) => e.status)).toEqual(['RELEASED']);
    // The exported entity maps the table for reading with TypeORM.
    const entries = await app.app.get(DataSource).getRepository(dialect.name === 'MariaDB' ? MysqlLockingLogEntity : LockingLogEntity).find();
    expect(entries).toMatchObject([{ stamp, appId: 'logger', lockNames: ['WS1', 'WS2'], lockModes: ['R', 'W'], status: 'RELEASED' }]);
  });

  it('renews the leases of held grants, so a live holder is never reaped', async () => {
    const holder = await start(db.url, { appId: 'holder', leaseMs: 600, renewIntervalMs: 100, reaperIntervalMs: 0 });
    const reaper = await start(db.url, { appId: 'reaper', reaperIntervalMs: 100 });
    const stamp = await holder.locks.tryLocks(['LIVE_WRITE']);
    await sleep(1500); // 2.5 leases
    expect(holder.locks.isHeld(stamp)).toBe(true);
    expect(holder.locks.getSignal(stamp).aborted).toBe(false);
    const [row] = await logRows();
    expect(row!.status).toBe('ACQUIRED');
    expect(row!.version).toBeGreaterThan(5); // renewed about every 100 ms
    expect(await reaper.locks.tryLocks(['LIVE_WRITE'])).toBe(0);
  });

  it('tells the holder when its grant is reaped: signal aborted, isHeld false, release throws', async () => {
    const holder = await start(db.url, { appId: 'frozen', leaseMs: 60_000, renewIntervalMs: 100, reaperIntervalMs: 0 });
    const reaper = await start(db.url, { appId: 'reaper', reaperIntervalMs: 0 });
    const stamp = await holder.locks.tryLocks(['COLD_WRITE']);
    const signal = holder.locks.getSignal(stamp);
    // As if the holder had been frozen past its lease: expire it in the database. The holder's next renewal (every
    // 100 ms) must find it ended and tell the holder, never revive it; then any reaper frees it.
    await expireLeases(db, dialect);
    await until(() => signal.aborted);
    expect(await reaper.locks.reapStaleLocks()).toBe(1);
    expect(await lockRows(db)).toEqual([]);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect(holder.locks.isHeld(stamp)).toBe(false);
    await expect(holder.locks.releaseLocks(stamp)).rejects.toThrow(IllegalMonitorStateError);
    expect((await logRows())[0]).toMatchObject({ status: 'REAPED' });
  });

  it('markBusinessDone moves the log row inside the business transaction, and refuses a lost grant', async () => {
    const app = await start(db.url, { appId: 'business', leaseMs: 60_000, reaperIntervalMs: 0 });
    await db.query('CREATE TABLE IF NOT EXISTS payments (id serial PRIMARY KEY, note text)');
    const dataSource = app.app.get(DataSource);
    const stamp = await app.locks.tryLocks(['LOAN:1_WRITE']);
    await dataSource.transaction(async (manager) => {
      await manager.query(`INSERT INTO payments (note) VALUES ('kept')`);
      await app.locks.markBusinessDone(stamp, manager);
    });
    expect((await logRows())[0]).toMatchObject({ status: 'BUSINESS_DONE', version: 2 });
    await app.locks.releaseLocks(stamp);

    const lost = await app.locks.tryLocks(['LOAN:1_WRITE']);
    await expireLeases(db, dialect, lost);
    const error = await dataSource
      .transaction(async (manager) => {
        await manager.query(`INSERT INTO payments (note) VALUES ('rolled back')`);
        await app.locks.markBusinessDone(lost, manager);
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(await db.query(`SELECT note FROM payments ORDER BY id`)).toEqual([{ note: 'kept' }]);
    expect(app.locks.getSignal(lost).aborted).toBe(true);
  });

  it('gives each grant exactly one terminal status when several reapers race', async () => {
    const holder = await start(db.url, { appId: 'doomed', leaseMs: 60_000, reaperIntervalMs: 0 });
    const stamps = await Promise.all(Array.from({ length: 60 }, (_, i) => holder.locks.tryLocks([`R${i}_WRITE`])));
    await expireLeases(db, dialect);
    const reapers = await Promise.all(
      [1, 2, 3, 4].map((i) => start(db.url, { appId: `reaper-${i}`, reaperIntervalMs: 0, reaperBatchSize: 7 })),
    );
    const counts = await Promise.all(reapers.map((r) => r.locks.reapStaleLocks()));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(60);
    const rows = await logRows();
    expect(rows.map((r) => Number(r.stamp)).sort((a, b) => a - b)).toEqual([...stamps].sort((a, b) => a - b));
    expect(rows.every((r) => r.status === 'REAPED' && r.version === 2)).toBe(true);
    expect(await lockRows(db)).toEqual([]);
  });

  it('ends a grant held past its maxHoldMs even while renewed, and prunes old log rows', async () => {
    const holder = await start(db.url, { appId: 'hog', leaseMs: 60_000, renewIntervalMs: 50, maxHoldMs: 300, reaperIntervalMs: 0 });
    const reaper = await start(db.url, { appId: 'strict', reaperIntervalMs: 100, logRetentionMs: 500 });
    const stamp = await holder.locks.tryLocks(['HOG_WRITE']);
    await until(async () => (await logRows())[0]?.status === 'REAPED');
    expect(holder.locks.isHeld(stamp)).toBe(false);
    await until(async () => (await logRows()).length === 0); // pruned once older than logRetentionMs
    expect(await reaper.locks.tryLocks(['HOG_WRITE'])).toBeGreaterThan(0);
  });

  it('a holder past its maxHoldMs is told before another instance is granted its lock', async () => {
    // Renewal every 100 ms keeps the lease alive: only maxHoldMs can end the grant; another instance asks all along.
    const holder = await start(db.url, { appId: 'capped', leaseMs: 5_000, renewIntervalMs: 100, maxHoldMs: 1_000, reaperIntervalMs: 0 });
    const other = await start(db.url, { appId: 'eager', reaperIntervalMs: 20 });
    const stamp = await holder.locks.tryLocks(['CAPPED_WRITE']);
    const signal = holder.locks.getSignal(stamp);
    let toldAt = Infinity;
    signal.addEventListener('abort', () => (toldAt = performance.now()));
    let granted = 0;
    let heldWhenGranted: boolean | undefined;
    while (granted === 0) {
      granted = await other.locks.tryLocks(['CAPPED_WRITE']);
      if (granted > 0) heldWhenGranted = holder.locks.isHeld(stamp) && !signal.aborted;
      else await sleep(5);
    }
    const grantedAt = performance.now();
    expect(heldWhenGranted).toBe(false);
    expect(toldAt).toBeLessThan(grantedAt);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect((signal.reason as Error).message).toMatch(/maxHoldMs \(1000 ms\)/);
  });

  it('a holder whose machine was suspended past its lease is told at once, before its next renewal', async () => {
    // A suspend stops the monotonic clock, not the wall clock (nor the database's): seen from the process, the wall
    // clock jumps. Renewals are far apart, so only the wall clock can tell it in time.
    const holder = await start(db.url, { appId: 'sleeper', leaseMs: 2_000, renewIntervalMs: 1_900, reaperIntervalMs: 0 });
    const stamp = await holder.locks.tryLocks(['SLEEPER_WRITE']);
    const signal = holder.locks.getSignal(stamp);
    const realNow = Date.now;
    Date.now = () => realNow() + 60_000;
    try {
      expect(holder.locks.isHeld(stamp)).toBe(false);
      expect(signal.aborted).toBe(true);
      expect((signal.reason as Error).message).toMatch(/wall clock passed its lease end/);
    } finally {
      Date.now = realNow;
    }
  });

  it('prunes a backlog far larger than a batch in one run, split between instances, keeping young and live rows', async () => {
    const options = { reaperIntervalMs: 60_000, logRetentionMs: 3_600_000 }; // the task stays out of the way
    const a = await start(db.url, { appId: 'pruner-a', ...options });
    const b = await start(db.url, { appId: 'pruner-b', ...options });
    const live = await a.locks.tryLocks(['LIVE_WRITE']);
    const young = await a.locks.tryLocks(['YOUNG_WRITE']);
    await a.locks.releaseLocks(young);
    await db.query(`UPDATE locking_log SET acquired = ${shifted(dialect, 'acquired', -2 * 86_400)} WHERE stamp = $1`, [live]);
    const backlog = 6 * PRUNE_BATCH_ROWS + 123; // as after a day at a rate pruning in 5,000-row runs could not follow
    await insertBacklog(db, dialect, backlog);
    const pruned = await Promise.all([a, b].map((app) => app.app.get(LockReaper).pruneLog()));
    expect(pruned[0] + pruned[1]).toBe(backlog);
    expect((await logRows()).map((r) => [Number(r.stamp), r.status])).toEqual([
      [live, 'ACQUIRED'],
      [young, 'RELEASED'],
    ]);
  });

  it('never prunes the log row of a live grant, however old, so it can still be reaped', async () => {
    const holder = await start(db.url, { appId: 'old-timer', leaseMs: 60_000, reaperIntervalMs: 0 });
    const stamp = await holder.locks.tryLocks(['OLD_WRITE']);
    const ended = await holder.locks.tryLocks(['GONE_WRITE']);
    await holder.locks.releaseLocks(ended);
    await db.query(
      `UPDATE locking_log SET acquired = ${shifted(dialect, 'acquired', -86_400)}, ended = ${shifted(dialect, 'ended', -86_400)}`,
    );
    await start(db.url, { appId: 'pruner', reaperIntervalMs: 50, logRetentionMs: 100 });
    await until(async () => (await logRows()).length === 1); // the ended row is pruned
    expect((await logRows())[0]).toMatchObject({ stamp: String(stamp), status: 'ACQUIRED' });
    // The reaper finds stale grants through the log: the old grant is freed once its lease ends.
    await expireLeases(db, dialect, stamp);
    await until(async () => (await lockRows(db)).length === 0);
  });

  it('refuses to start a second live instance with the same appId, and starts once the first is gone', async () => {
    const first = await start(db.url, { appId: 'twin' });
    const stamp = await first.locks.tryLocks(['TWIN_WRITE']);
    const error = await createLockApp(db.url, { appId: 'twin' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppIdInUseError);
    if (dialect.name === 'PostgreSQL') expect((error as Error).message).toMatch(/nestjs-db-locks twin/); // application_name
    else {
      // MySQL names the session holding the app id's GET_LOCK: a live one.
      const [, holder] = /connection id (\d+)/.exec((error as Error).message) ?? [];
      expect(await db.query('SELECT ID FROM information_schema.PROCESSLIST WHERE ID = $1', [Number(holder)])).toHaveLength(1);
    }
    // The twin's start-up recovery did not run: the first instance keeps its lock.
    expect(await lockRows(db)).toHaveLength(1);
    expect(first.locks.isHeld(stamp)).toBe(true);
    const signal = first.locks.getSignal(stamp);
    await first.close(); // its holder is told; the rows stay until the app id starts again
    expect(signal.aborted).toBe(true);
    apps.splice(apps.indexOf(first), 1);
    const second = await start(db.url, { appId: 'twin' });
    expect(await lockRows(db)).toEqual([]);
    expect((await logRows())[0]).toMatchObject({ status: 'RECOVERED' });
    expect(await second.locks.tryLocks(['TWIN_WRITE'])).toBeGreaterThan(stamp);
  });

  it('lets a @WithLocks method read its own grant and signal', async () => {
    const app = await start(db.url, { appId: 'payouts' }, 4, [Payouts]);
    const seen = await app.app.get(Payouts).current();
    expect(seen).toEqual({ stamp: expect.any(Number), aborted: false });
    expect(app.locks.currentLock()).toBeUndefined();
    // Fencing tokens increase strictly with every later grant of the name, whoever takes it.
    const other = await start(db.url, { appId: 'payouts-2' });
    const next = await other.locks.tryLocks(['PAYOUT_WRITE']);
    expect(other.locks.getFencingToken(next)).toBeGreaterThan(app.locks.getFencingToken(seen!.stamp));
  });

  // PostgreSQL's instance lock is an advisory lock on a hash of the app id; MySQL's is GET_LOCK on a 240-bit one.
  if (dialect.name === 'PostgreSQL') it('tells apart app ids whose 32-bit hashes collide, and names the holder of a contested one', async () => {
    // hashtext('svc-6618') = hashtext('svc-136555'): with a 32-bit key the second instance was refused.
    const [hashes] = await db.query<{ same: boolean }>(`SELECT hashtext('svc-6618') = hashtext('svc-136555') AS same`);
    expect(hashes!.same).toBe(true);
    const first = await start(db.url, { appId: 'svc-6618', instance: 'first-box' });
    const second = await start(db.url, { appId: 'svc-136555' });
    expect(await first.locks.tryLocks(['SVC_WRITE'])).toBeGreaterThan(0);
    expect(await second.locks.tryLocks(['SVC2_WRITE'])).toBeGreaterThan(0);
    const error = await createLockApp(db.url, { appId: 'svc-6618' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppIdInUseError);
    expect((error as Error).message).toContain('nestjs-db-locks svc-6618 first-box');
  });

  it('markBusinessDone refuses an EntityManager outside a transaction, and writes nothing', async () => {
    const app = await start(db.url, { appId: 'no-tx', reaperIntervalMs: 0 });
    const stamp = await app.locks.tryLocks(['NOTX_WRITE']);
    const dataSource = app.app.get(DataSource);
    await expect(app.locks.markBusinessDone(stamp, dataSource.manager)).rejects.toThrow(InvalidLockArgumentError);
    const runner = dataSource.createQueryRunner();
    await expect(app.locks.markBusinessDone(stamp, runner.manager)).rejects.toThrow(InvalidLockArgumentError);
    await runner.release();
    expect((await logRows())[0]).toMatchObject({ status: 'ACQUIRED', version: 1 });
    expect(app.locks.isHeld(stamp)).toBe(true);
  });

  it('a long business transaction does not hold up the renewal of the instance\'s other grants', async () => {
    const holder = await start(db.url, { appId: 'long-tx', leaseMs: 600, renewIntervalMs: 100, reaperIntervalMs: 0 });
    const reaper = await start(db.url, { appId: 'reaper', reaperIntervalMs: 100 });
    const dataSource = holder.app.get(DataSource);
    const inTx = await holder.locks.tryLocks(['LONG_WRITE']);
    const other = await holder.locks.tryLocks(['OTHER_WRITE']);
    const runner = dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await holder.locks.markBusinessDone(inTx, runner.manager);
      // The business transaction now holds its log row; the other grant is renewed through three leases.
      const versionOf = async (stamp: number) =>
        (await logRows()).find((row) => Number(row.stamp) === stamp)?.version ?? 0;
      await until(async () => (await versionOf(other)) >= 20, 20_000);
      expect(holder.locks.isHeld(other)).toBe(true);
      expect(await reaper.locks.tryLocks(['OTHER_WRITE'])).toBe(0);
      // The grant in the transaction could not be renewed: its holder is told once its lease has run out on its own
      // clock, although no reaper can take it while the transaction lasts.
      expect(holder.locks.isHeld(inTx)).toBe(false);
      expect(await reaper.locks.tryLocks(['LONG_WRITE'])).toBe(0);
    } finally {
      await runner.commitTransaction();
      await runner.release();
    }
  });
});
