import { getDataSourceToken } from '@nestjs/typeorm';
import { AppIdInUseError, LockConfigurationError } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { poolKeepsSessions } from '../../lib/store/postgres/postgres-pooler.util.js';
import { exerciseEngine } from '../support/exercise-engine.js';
import { runCheckedWorkers } from '../support/checked-workers.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { createLockApp, trackApps, type TestLockOptions } from '../support/lock-app.js';
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../support/pgbouncer-server.mjs';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Advisory locks held in the test database. */
async function advisoryLocks(db: TestDatabase): Promise<unknown[]> {
  return db.query(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory'
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
}

/** Attempts per concurrent client (a count, not a duration: the machine may be loaded). */
const ATTEMPTS = 40;

const run = pgbouncerInstalled() ? describe : describe.skip;

run("through PgBouncer in session mode (declared: pooler: 'session')", () => {
  let bouncer: PgBouncer;
  let db: TestDatabase;
  // Through the pooler, declared; directly (a URL given), nothing to declare; `options` replace those.
  const apps = trackApps((appId: string, url?: string, options?: Partial<TestLockOptions>) =>
    createLockApp(url ?? bouncer.through(db.url), {
      appId,
      waitRecheckMs: 10_000,
      ...(options ?? (url ? {} : { pooler: 'session' })),
    }),
  );

  beforeAll(async () => {
    bouncer = await startPgBouncer('session', 20);
    db = await createTestDatabase();
  });
  afterEach(() => apps.closeAll());
  // A closed session's advisory lock goes with its backend (or PgBouncer's reset of the server connection): moments
  // after the client closed, not at once. Each test starts once the previous one's are gone.
  beforeEach(() => until(async () => (await advisoryLocks(db)).length === 0, 5000));
  afterAll(async () => {
    await bouncer?.stop();
    await db?.drop();
  });

  it("refuses to start undeclared, naming pooler: 'session' and directUrl (a pooler's session mode cannot be proven)", async () => {
    const start = apps.start('undeclared', undefined, {});
    await expect(start).rejects.toThrow(LockConfigurationError);
    await expect(start).rejects.toThrow(/through a pooler.*directUrl.*pooler: 'session'/s);
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it('refuses a directUrl through it: a directUrl must be proven to reach PostgreSQL itself', async () => {
    const start = apps.start('direct-via-pooler', db.url, { directUrl: bouncer.through(db.url) });
    await expect(start).rejects.toThrow(LockConfigurationError);
    await expect(start).rejects.toThrow(/directUrl reaches a pooler, not a PostgreSQL session of its own/);
    expect(await advisoryLocks(db)).toEqual([]);
  });

  it('starts declared without directUrl, keeps named prepared statements, and runs the engine', async () => {
    const one = await apps.start('one');
    expect(poolKeepsSessions(one.app.get<DataSource>(getDataSourceToken()))).toBe(true);
    await exerciseEngine(one.locks);
    const direct = await apps.start('direct', db.url); // and directly, likewise
    expect(poolKeepsSessions(direct.app.get<DataSource>(getDataSourceToken()))).toBe(true);
  });

  it('refuses a twin, wakes a waiter at the release, and leaves no advisory lock on a pooled connection', async () => {
    const one = await apps.start('one');
    const two = await apps.start('two');
    await expect(apps.start('one')).rejects.toThrow(AppIdInUseError);
    const held = await one.locks.tryLocks(['S_WRITE']);
    const waiting = two.locks.tryLocks(['S_WRITE'], { waitMs: 20_000 });
    await sleep(300);
    const released = Date.now();
    await one.locks.releaseLocks(held);
    const granted = await waiting;
    expect(granted).toBeGreaterThan(held);
    expect(Date.now() - released).toBeLessThan(5000); // the notification, not the 10 s re-check
    await two.locks.releaseLocks(granted);
    expect(await advisoryLocks(db)).toHaveLength(2);
    await apps.closeAll();
    // PgBouncer resets a server connection its client left (server_reset_query = DISCARD ALL, the default).
    await until(async () => (await advisoryLocks(db)).length === 0, 5000);
    await apps.start('one');
  });

  it('never grants twice under real concurrent clients, with no error, and leaks nothing', async () => {
    const instances = await Promise.all(['c1', 'c2'].map((appId) => apps.start(appId)));
    const sampler = startDbSampler(db.url);
    const { grants, errors, violations } = await runCheckedWorkers(instances, {
      workers: 3,
      attempts: ATTEMPTS,
      group: (i) => [{ name: `S${i % 2}`, mode: i % 3 === 0 ? 'read' : 'write' }],
      waitMs: (i) => (i % 2 === 0 ? 200 : 0),
    });
    const report = await sampler.stop();
    expect(errors).toEqual([]);
    expect(violations).toEqual([]);
    expect(report.violations).toEqual([]);
    expect(grants).toBeGreaterThan(20);
    await apps.closeAll();
    expect(await db.query('SELECT lock_name FROM locking')).toEqual([]);
    expect(await db.query('SELECT 1 FROM locking_waiters')).toEqual([]);
  });
});
