import { Injectable } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import {
  AppIdInUseError,
  IllegalMonitorStateError,
  LeaderService,
  LockConfigurationError,
  LockService,
  WithLocks,
} from 'nestjs-db-locks';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { detectPoolTopology, poolKeepsSessions } from '../../lib/store/postgres/postgres-pooler.util.js';
import { runCheckedWorkers } from '../support/checked-workers.js';
import { mostLeadersAtOnce, quantile, standInOrder } from '../support/leader-fleet.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { createLockApp, trackApps, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../support/pgbouncer-server.mjs';
import { startFaultProxy } from '../support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Advisory locks held in the test database, with the holder's application_name. */
async function advisoryLocks(db: TestDatabase): Promise<Array<{ pid: number; application_name: string }>> {
  return db.query(
    `SELECT l.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
}

/** The backends of the test database that a session of the library has not named: PgBouncer's server connections. */
async function pooledBackends(db: TestDatabase): Promise<number> {
  const [row] = await db.query<{ n: string }>(
    `SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND application_name NOT LIKE 'nestjs-db-locks %'`,
  );
  return Number(row?.n ?? 0);
}

@Injectable()
class Ledger {
  constructor(private readonly locks: LockService) {}

  /** Writes a ledger row in the fenced transaction; the row commits with the fence. */
  @WithLocks({ locks: (loan: number) => [`loan:${loan}_WRITE`], transaction: true })
  async repay(loan: number, cents: number): Promise<{ stamp: number; inTransaction: boolean }> {
    const manager = this.locks.currentManager();
    const stamp = this.locks.currentLock()!.stamp;
    await manager.query('INSERT INTO ledger (loan, cents, stamp) VALUES ($1, $2, $3)', [loan, cents, stamp]);
    if (cents < 0) throw new RangeError('never negative');
    return { stamp, inTransaction: manager.queryRunner?.isTransactionActive === true };
  }
}

/** Attempts per concurrent client (a count, not a duration: the machine may be loaded). */
const ATTEMPTS = 40;
/** Hand-overs of a leader role by resign, for the median and the 99th percentile. */
const HAND_OVERS = 30;

const run = pgbouncerInstalled() ? describe : describe.skip;

run('through PgBouncer in transaction mode (Debian 1.18: no prepared statements)', () => {
  let bouncer: PgBouncer;
  let db: TestDatabase;
  const apps = trackApps((options: TestLockOptions, pooled = true) =>
    createLockApp(pooled ? bouncer.through(db.url) : db.url, options, 4, [Ledger]),
  );
  /** An instance whose DataSource goes through PgBouncer, its kept sessions on the database directly. */
  const open = (appId: string, options: Partial<TestLockOptions> = {}): Promise<LockApp> =>
    apps.start({ appId, directUrl: db.url, waitRecheckMs: 10_000, ...options });

  beforeAll(async () => {
    bouncer = await startPgBouncer('transaction', 4);
    db = await createTestDatabase();
    await db.query('CREATE TABLE ledger (loan int NOT NULL, cents int NOT NULL, stamp bigint NOT NULL)');
  });
  afterEach(() => apps.closeAll());
  // A closed session's advisory lock goes with its backend (or PgBouncer's reset of the server connection): moments
  // after the client closed, not at once. Each test starts once the previous one's are gone.
  beforeEach(() => until(async () => (await advisoryLocks(db)).length === 0, 5000));
  afterAll(async () => {
    await bouncer?.stop();
    await db?.drop();
  });

  it('is PgBouncer 1.18 or later', () => {
    expect(bouncer.version).toMatch(/^1\.(1[89]|[2-9]\d)\./);
  });

  it('is told from a direct connection, and a session-mode pooler is not taken for sessions, by the start-up check', async () => {
    const topology = async (url: string) => {
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      try {
        return await detectPoolTopology(pool, 5000);
      } finally {
        await pool.end();
      }
    };
    const single = await startPgBouncer('transaction', 1); // one server connection: the check must not wait for itself
    const session = await startPgBouncer('session', 4);
    const proxy = await startFaultProxy(db.url); // a TCP proxy (as HAProxy) passes the server's BackendKeyData on
    try {
      expect(await topology(proxy.via(db.url))).toBe('session');
      expect(await topology(bouncer.through(db.url))).toBe('transaction');
      expect(await topology(single.through(db.url))).toBe('transaction');
      expect(await topology(session.through(db.url))).toBe('pooler'); // shares nothing, but its sessions are unproven
      expect(await topology(db.url)).toBe('session');
    } finally {
      await single.stop();
      await session.stop();
      await proxy.close();
    }
  });

  it('refuses to start without directUrl, naming the option, and leaves no advisory lock behind', async () => {
    for (const options of [{}, { pooler: 'transaction' as const }]) {
      const start = apps.start({ appId: 'no-direct', ...options });
      await expect(start).rejects.toThrow(LockConfigurationError);
      await expect(start).rejects.toThrow(/transaction pooler.*directUrl/s);
    }
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it("refuses pooler: 'session' declared on a pooler seen sharing server connections", async () => {
    const start = apps.start({ appId: 'misdeclared', pooler: 'session' });
    await expect(start).rejects.toThrow(LockConfigurationError);
    await expect(start).rejects.toThrow(/pooler is 'session', but .* seen sharing server connections/);
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it('refuses a pooler in statement mode, which refuses transactions', async () => {
    const statement = await startPgBouncer('statement', 4);
    try {
      const pool = new pg.Pool({ connectionString: statement.through(db.url), max: 2 });
      pool.on('error', () => undefined);
      expect(await detectPoolTopology(pool, 5000)).toBe('statement');
      await pool.end();
      const start = createLockApp(statement.through(db.url), { appId: 'statement', directUrl: db.url });
      await expect(start).rejects.toThrow(LockConfigurationError);
      await expect(start).rejects.toThrow(/statement mode/);
    } finally {
      await statement.stop();
    }
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it('validates directUrl and pooler before touching the database, without echoing a password', async () => {
    for (const directUrl of ['mysql://u:secret@h/db', 'mysql://u:se/cret@h/db', 'not a url', 42]) {
      const start = apps.start({ appId: 'bad', directUrl: directUrl as string });
      await expect(start).rejects.toThrow(LockConfigurationError);
      await expect(start).rejects.toThrow(/option directUrl must be a postgres:\/\/ connection string/);
      await expect(start).rejects.not.toThrow(/secret|se\/cret/);
    }
    await expect(apps.start({ appId: 'bad', pooler: 'auto' as never })).rejects.toThrow(/option pooler must be/);
  });

  it('refuses a directUrl that reaches the transaction pooler, or another database', async () => {
    const viaBouncer = apps.start({ appId: 'direct-pooled', directUrl: bouncer.through(db.url) });
    await expect(viaBouncer).rejects.toThrow(/directUrl reaches a pooler in transaction/);
    const other = await createTestDatabase({ migrate: false });
    try {
      const elsewhere = apps.start({ appId: 'direct-elsewhere', directUrl: other.url });
      await expect(elsewhere).rejects.toThrow(LockConfigurationError);
      await expect(elsewhere).rejects.toThrow(/directUrl reaches another server or database/);
    } finally {
      await other.drop();
    }
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it("runs unnamed on a direct DataSource too when told pooler: 'transaction'", async () => {
    const told = await apps.start({ appId: 'told', pooler: 'transaction', directUrl: db.url }, false);
    expect(poolKeepsSessions(told.app.get<DataSource>(getDataSourceToken()))).toBe(false);
    const stamps = await Promise.all(['T1_WRITE', 'T2_WRITE', 'T3_READ'].map((lock) => told.locks.tryLocks([lock as 'T1_WRITE'])));
    expect(stamps.every((stamp) => stamp > 0)).toBe(true);
    for (const stamp of stamps) await told.locks.releaseLocks(stamp);
  });

  it('grants and refuses read and write groups with their permits, and releases', async () => {
    const permits = { defaultPermits: { read: 2, write: 1 } };
    const one = await open('one', permits);
    const two = await open('two', permits);
    expect(poolKeepsSessions(one.app.get<DataSource>(getDataSourceToken()))).toBe(false); // statements go unnamed
    const r1 = await one.locks.tryLocks(['A_READ', 'B_WRITE']);
    expect(r1).toBeGreaterThan(0);
    const r2 = await two.locks.tryLocks(['A_READ']);
    expect(r2).toBeGreaterThan(r1);
    expect(await two.locks.tryLocks(['A_READ'])).toBe(0); // a third reader: 2 permits
    expect(await two.locks.tryLocks(['A_WRITE'])).toBe(0);
    expect(await two.locks.tryLocks(['C_WRITE', 'B_READ'])).toBe(0); // all or nothing
    expect(await two.locks.tryLocks(['C_WRITE'])).toBeGreaterThan(0); // C was not kept by the refusal
    await one.locks.releaseLocks(r1);
    await two.locks.releaseLocks(r2);
    const writer = await two.locks.tryLocks(['A_WRITE', 'B_WRITE']);
    expect(writer).toBeGreaterThan(r2);
    await two.locks.releaseLocks(writer);
    await expect(two.locks.releaseLocks(writer)).rejects.toThrow(IllegalMonitorStateError); // released once
  });

  it('wakes a waiter as soon as the holder releases (LISTEN on the direct connection)', async () => {
    const one = await open('one');
    const two = await open('two');
    const held = await one.locks.tryLocks(['W_WRITE']);
    const waiting = two.locks.tryLocks(['W_WRITE'], { waitMs: 20_000 });
    await sleep(300); // the waiter is registered and listening
    const released = Date.now();
    await one.locks.releaseLocks(held);
    const stamp = await waiting;
    expect(stamp).toBeGreaterThan(held);
    // Woken by the notification: the re-check timer (waitRecheckMs 10 s) cannot explain it.
    expect(Date.now() - released).toBeLessThan(5000);
    await two.locks.releaseLocks(stamp);
  });

  it('elects one leader at a time, and hands the role over on resign woken by the database (LISTEN on the direct connection)', async () => {
    const role = 'pooled-role';
    const replicas = await Promise.all(['l1', 'l2', 'l3'].map((appId) => open(appId)));
    const leaders = replicas.map((replica) => replica.app.get(LeaderService));
    const { told, stand } = await standInOrder(leaders, role);
    await sleep(300); // the candidates wait, listening
    const handOvers: number[] = [];
    for (let i = 0; i < HAND_OVERS; i++) {
      const leader = leaders.findIndex((service) => service.isLeader(role));
      expect(leader).toBeGreaterThanOrEqual(0);
      const seen = told.length;
      const resigned = performance.now();
      await leaders[leader]!.resign(role);
      await until(() => told.slice(seen).some((change) => change.leading), 5000);
      handOvers.push(told.slice(seen).find((change) => change.leading)!.t - resigned);
      stand(leader); // at the back of the queue
    }
    // At every instant one replica at most believed it led; each term's token is larger than the last.
    expect(mostLeadersAtOnce(told)).toBe(1);
    const tokens = told.filter((change) => change.leading).map((change) => change.token);
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(HAND_OVERS + 1);
    // Woken by the release's notification: the re-check timer (waitRecheckMs 10 s) cannot explain any of them.
    expect(Math.max(...handOvers)).toBeLessThan(2000);
    process.stdout.write(
      `leader hand-over on resign through PgBouncer (transaction mode, directUrl), ${HAND_OVERS} hand-overs: ` +
        `median ${quantile(handOvers, 0.5).toFixed(1)} ms, p99 ${quantile(handOvers, 0.99).toFixed(1)} ms, max ${Math.max(...handOvers).toFixed(1)} ms\n`,
    );
    for (const service of leaders) await service.resign(role);
  });

  it('refuses a twin, and keeps every advisory lock on a direct session, none on a pooled server connection', async () => {
    await open('one');
    await open('two');
    await expect(open('one')).rejects.toThrow(AppIdInUseError);
    const held = await advisoryLocks(db);
    expect(held.map((l) => l.application_name.split(' ')[1]).sort()).toEqual(['one', 'two']);
    await apps.closeAll();
    // PgBouncer keeps its server connections open; none of them holds an advisory lock once the sessions ended.
    await until(async () => (await advisoryLocks(db)).length === 0, 5000);
    expect(await pooledBackends(db)).toBeGreaterThan(0);
    await open('one'); // the app id is free again at once
  });

  it('runs a fenced @WithLocks transaction through the pooler', async () => {
    const one = await open('one');
    const ledger = one.app.get(Ledger);
    const { stamp, inTransaction } = await ledger.repay(7, 100);
    expect(inTransaction).toBe(true);
    const [log] = await db.query<{ status: string; fenced: boolean }>(
      'SELECT status, business_done IS NOT NULL AS fenced FROM locking_log WHERE stamp = $1',
      [stamp],
    );
    expect(log).toEqual({ status: 'RELEASED', fenced: true });
    await expect(ledger.repay(8, -1)).rejects.toThrow(RangeError); // rolled back with its fence
    expect(await db.query('SELECT loan FROM ledger ORDER BY loan')).toEqual([{ loan: 7 }]);
  });

  it('never grants twice, under real concurrent clients, and leaks nothing', async () => {
    const instances = await Promise.all(['c1', 'c2', 'c3'].map((appId) => open(appId, { waitRecheckMs: 200 })));
    const sampler = startDbSampler(db.url);
    const { grants, errors, violations } = await runCheckedWorkers(instances, {
      workers: 4,
      attempts: ATTEMPTS,
      group: (i) => [
        { name: `K${i % 3}`, mode: i % 4 === 0 ? 'read' : 'write' },
        { name: `K${(i + 1) % 3}`, mode: 'read' },
      ],
      waitMs: (i) => (i % 2 === 0 ? 300 : 0),
    });
    const report = await sampler.stop();
    expect(errors).toEqual([]);
    expect(violations).toEqual([]);
    expect(report.violations).toEqual([]);
    expect(report.samples).toBeGreaterThan(0);
    expect(grants).toBeGreaterThan(20);
    await apps.closeAll();
    expect(await db.query('SELECT lock_name FROM locking')).toEqual([]);
    expect(await db.query('SELECT 1 FROM locking_waiters')).toEqual([]);
    await until(async () => (await advisoryLocks(db)).length === 0, 5000);
  });
});
