import { getDataSourceToken } from '@nestjs/typeorm';
import { AppIdInUseError, LockConfigurationError } from 'nestjs-db-locks';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { detectPoolTopology, poolKeepsSessions, type PoolTopology } from '../../lib/store/postgres/postgres-pooler.util.js';
import { runCheckedWorkers } from '../support/checked-workers.js';
import { createLockApp, trackApps, type TestLockOptions } from '../support/lock-app.js';
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../support/pgbouncer-server.mjs';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Calls of the detector per pool size, each on a pool of its own (as many start-ups). */
const DETECTIONS = 50;
/** Start-ups without directUrl per pool size. */
const START_UPS = 5;
/** Acquisitions per worker; 3 instances × 6 workers. */
const ATTEMPTS = 20;

/** Advisory locks held in the test database. */
async function advisoryLocks(db: TestDatabase): Promise<unknown[]> {
  return db.query(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory'
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
}

const run = pgbouncerInstalled() ? describe : describe.skip;

// PgBouncer in transaction mode handing out its server connections in turn (server_round_robin = 1): which server
// connection a client gets next depends on the pooler's policy, so a check that watches pids at the wrong moments sees
// sharing only sometimes. A pooler is never taken for real sessions (the start-up's pid proves it), and the check reads
// a pid with both its connections idle, where such a pooler always hands out the other server connection: it is seen
// sharing at every check, so a `pooler: 'session'` declared on it is always refused.
run('through PgBouncer in transaction mode with server_round_robin = 1', () => {
  let db: TestDatabase;
  const bouncers = new Map<number, PgBouncer>();
  const apps = trackApps((url: string, options: TestLockOptions) => createLockApp(url, options, 4));

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const size of [1, 2, 3, 4]) bouncers.set(size, await startPgBouncer('transaction', size, { server_round_robin: 1 }));
  });
  afterEach(() => apps.closeAll());
  beforeEach(() => until(async () => (await advisoryLocks(db)).length === 0, 5000));
  afterAll(async () => {
    for (const bouncer of bouncers.values()) await bouncer.stop();
    await db?.drop();
  });

  it.each([1, 2, 3, 4])('is seen sharing server connections at every check (pool size %i, 50 calls of the check)', async (size) => {
    const through = bouncers.get(size)!.through(db.url);
    const seen = new Map<PoolTopology, number>();
    for (let i = 0; i < DETECTIONS; i++) {
      const pool = new pg.Pool({ connectionString: through, max: 2 });
      pool.on('error', () => undefined);
      try {
        const topology = await detectPoolTopology(pool, 5000);
        seen.set(topology, (seen.get(topology) ?? 0) + 1);
      } finally {
        await pool.end();
      }
    }
    process.stdout.write(`server_round_robin, pool size ${size}: ${JSON.stringify(Object.fromEntries(seen))}\n`);
    expect(Object.fromEntries(seen)).toEqual({ transaction: DETECTIONS });
  });

  it(`refuses every start-up that declares pooler: 'session' (${START_UPS} per pool size), naming directUrl, holding nothing`, async () => {
    for (const size of [1, 2, 3, 4]) {
      for (let i = 0; i < START_UPS; i++) {
        const start = apps.start(bouncers.get(size)!.through(db.url), { appId: `rr-declared-${size}-${i}`, pooler: 'session' });
        await expect(start).rejects.toThrow(LockConfigurationError);
        await expect(start).rejects.toThrow(/pooler is 'session', but .* seen sharing server connections between transactions.*directUrl/s);
      }
    }
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it(`refuses every start-up without directUrl (${START_UPS} per pool size), naming directUrl`, async () => {
    for (const size of [1, 2, 3, 4]) {
      for (let i = 0; i < START_UPS; i++) {
        const start = apps.start(bouncers.get(size)!.through(db.url), { appId: `rr-${size}-${i}` });
        await expect(start).rejects.toThrow(LockConfigurationError);
        await expect(start).rejects.toThrow(/directUrl/);
      }
    }
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it.each([1, 2, 3, 4])(
    'with directUrl (pool size %i): no named statement reaches the pooler under concurrent clients, no lock is left, a twin is refused',
    async (size) => {
      const through = bouncers.get(size)!.through(db.url);
      // Renewals every 10 ms: statements of their own beside the hot path's, on pool connections while the kept session
      // is busy.
      const open = (appId: string) =>
        apps.start(through, { appId, directUrl: db.url, waitRecheckMs: 200, renewIntervalMs: 10 });
      const instances = await Promise.all(['c1', 'c2', 'c3'].map(open));
      // Statements on the pool go unnamed in every instance.
      expect(instances.map((one) => poolKeepsSessions(one.app.get<DataSource>(getDataSourceToken())))).toEqual([false, false, false]);
      await expect(open('c1')).rejects.toThrow(AppIdInUseError);
      const { grants, errors, violations } = await runCheckedWorkers(instances, {
        workers: 6,
        attempts: ATTEMPTS,
        group: (i) => [{ name: `R${i % 3}`, mode: i % 4 === 0 ? 'read' : 'write' }],
        waitMs: (i) => (i % 2 === 0 ? 300 : 0),
      });
      process.stdout.write(`server_round_robin, pool size ${size}, directUrl: ${grants} grants, ${errors.length} errors\n`);
      expect(errors.map((error) => String(error))).toEqual([]); // no 42P05 / 26000
      expect(violations).toEqual([]);
      expect(grants).toBeGreaterThan(50);
      expect(await db.query('SELECT lock_name FROM locking')).toEqual([]); // every release went through
      await apps.closeAll();
      expect(await db.query('SELECT 1 FROM locking_waiters')).toEqual([]);
    },
  );
});
