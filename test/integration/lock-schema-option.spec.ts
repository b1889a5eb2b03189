import {
  LOCK_MIGRATIONS,
  LeaderService,
  LockAdminService,
  LockConfigurationError,
  LockModule,
  lockEntities,
  lockMigrations,
  type LockTablesOptions,
} from 'nestjs-db-locks';
import type pg from 'pg';
import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { connectClient, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { PostgresStatementRunner } from '../../lib/store/postgres/postgres-statement.runner.js';
import { TRY_ACQUIRE_ONE } from '../../lib/store/postgres/postgres-lock.queries.sql.js';
import { resolveLockTables } from '../../lib/store/lock-tables.util.js';

/**
 * The lock tables in a place of the application's choosing: a PostgreSQL schema, a MySQL/MariaDB table prefix. Two
 * places (and the default one) in one database, each with an instance under the same `appId`: each grants the same
 * names on its own, and none sees the locks, waiters, log, permits or wake-ups of another.
 */

/** The two places of a dialect, and the DataSource options that reach its test database. */
function placesOf(dialect: TestDialect): [LockTablesOptions, LockTablesOptions] {
  return dialect.name === 'PostgreSQL' ? [{ schema: 'locks_a' }, { schema: 'locks_b' }] : [{ tablePrefix: 'app_a_' }, { tablePrefix: 'app_b_' }];
}

function dataSourceOptions(dialect: TestDialect, url: string): DataSourceOptions {
  return dialect.name === 'PostgreSQL' ? { type: 'postgres', url } : { type: 'mariadb', url, timezone: 'Z' };
}

/** The lock objects (tables, functions, procedures, sequences) of a place, by name. */
async function objectsOf(dialect: TestDialect, db: TestDatabase, place: LockTablesOptions): Promise<string[]> {
  const rows =
    dialect.name === 'PostgreSQL'
      ? await db.query<{ name: string }>(
          `SELECT c.relname::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'S') AND c.relname LIKE 'locking%'
           UNION ALL SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname LIKE 'locking%'`,
          [place.schema],
        )
      : await db.query<{ name: string }>(
          `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE $1
           UNION ALL SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE $1`,
          [`${place.tablePrefix}%`],
        );
  return rows.map((row) => row.name).sort();
}

for (const dialect of DIALECTS) {
  const [a, b] = placesOf(dialect);
  const label = (place: LockTablesOptions) => place.schema ?? place.tablePrefix;

  dialect.describe(`Lock tables in a place of their own (${dialect.name}: ${label(a)}, ${label(b)} and the default)`, () => {
    let db: TestDatabase;
    let migrator: DataSource;
    const apps = trackApps(createLockApp);
    beforeAll(async () => {
      db = await dialect.createDatabase(); // the default place, migrated as before
      migrator = new DataSource({ ...dataSourceOptions(dialect, db.url), migrations: [...lockMigrations(a), ...lockMigrations(b)] });
      await migrator.initialize();
      await migrator.runMigrations();
    });
    afterEach(() => apps.closeAll());
    afterAll(async () => {
      await migrator?.destroy();
      await db?.drop();
    });

    it('migrate each place on its own: the same objects, under their own names, recorded under their own names', async () => {
      const defaults = await objectsOf(dialect, db, dialect.name === 'PostgreSQL' ? { schema: 'public' } : { tablePrefix: 'locking' });
      const inA = await objectsOf(dialect, db, a);
      expect(inA.length).toBeGreaterThanOrEqual(7);
      if (dialect.name === 'PostgreSQL') expect(inA).toEqual(defaults);
      else expect(inA).toEqual(defaults.map((name) => `${a.tablePrefix}${name}`));
      expect(await objectsOf(dialect, db, b)).toEqual(dialect.name === 'PostgreSQL' ? defaults : defaults.map((n) => `${b.tablePrefix}${n}`));
      if (dialect.name === 'MariaDB') {
        // MySQL 8 names CHECK constraints per database: a second place needs names of its own.
        const checks = await db.query<{ name: string }>(
          `SELECT CONSTRAINT_NAME AS name FROM information_schema.CHECK_CONSTRAINTS
            WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME LIKE $1`,
          [`${a.tablePrefix}%`],
        );
        // (MariaDB also lists the json_valid() check of each JSON column, named after the column.)
        const named = checks.map((check) => check.name).filter((name) => !['lock_names', 'lock_modes'].includes(name));
        expect(named.length).toBeGreaterThanOrEqual(3);
        for (const name of named) expect(name.startsWith(`${a.tablePrefix}locking_`)).toBe(true);
      }
      const recorded = (await db.query<{ name: string }>('SELECT name FROM migrations')).map((row) => row.name);
      for (const migration of LOCK_MIGRATIONS) {
        expect(recorded).toContain(migration.name);
        expect(recorded).toContain(lockMigrations(a).find((m) => m.name.endsWith(migration.name.slice(-13)))?.name);
      }
      expect(new Set(recorded).size).toBe(LOCK_MIGRATIONS.length * 3);
      const admin = LockAdminService.create(migrator, a);
      expect(await admin.getSchemaStatus()).toEqual({
        applied: lockMigrations(a).map((m) => m.name),
        pending: [],
        tablesPresent: true,
      });
    });

    it('leave nothing for `synchronize` to change: lockEntities match the place', async () => {
      const dataSource = new DataSource({
        ...dataSourceOptions(dialect, db.url),
        entities: [...lockEntities({ ...a, dialect: dialect.name === 'PostgreSQL' ? 'postgres' : 'mysql' })],
      });
      await dataSource.initialize();
      try {
        const paths = dataSource.entityMetadatas.map((metadata) => metadata.tablePath);
        expect(paths).toHaveLength(5);
        for (const path of paths) expect(path.startsWith(a.schema ? `${a.schema}.locking` : `${a.tablePrefix}locking`)).toBe(true);
        const pending = await dataSource.driver.createSchemaBuilder().log();
        expect(pending.upQueries.map((query) => query.query)).toEqual([]);
      } finally {
        await dataSource.destroy();
      }
    });

    it('grant the same name under the same appId in each place at once; reports and permits stay in their place', async () => {
      const inA = await apps.start(db.url, { appId: 'same', ...a });
      const inB = await apps.start(db.url, { appId: 'same', ...b });
      const inDefault = await apps.start(db.url, { appId: 'same' });
      const stampA = await inA.locks.tryLocks(['orders_WRITE']);
      const stampB = await inB.locks.tryLocks(['orders_WRITE']);
      const stampDefault = await inDefault.locks.tryLocks(['orders_WRITE']);
      expect([stampA, stampB, stampDefault].every((stamp) => stamp > 0)).toBe(true);
      expect(await inA.locks.tryLocks(['orders_READ'])).toBe(0); // its own place still excludes

      const adminA = inA.app.get(LockAdminService);
      const adminB = inB.app.get(LockAdminService);
      expect((await adminA.getGrants()).map((grant) => grant.stamp)).toEqual([stampA]);
      expect((await adminB.getGrants()).map((grant) => grant.stamp)).toEqual([stampB]);
      expect((await adminA.getLog({ name: 'orders' })).map((entry) => entry.stamp)).toEqual([stampA]);

      expect(await adminA.getJobs()).toEqual([]); // the job tables of the place answer too
      // Leader election too: the same role is led in each place at once, and each place lists its own leader.
      const leadUntilTold = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      for (const app of [inA, inB, inDefault]) app.app.get(LeaderService).campaign('orders-relay', leadUntilTold);
      await until(() => [inA, inB, inDefault].every((app) => app.app.get(LeaderService).isLeader('orders-relay')));
      const termA = inA.app.get(LeaderService).term('orders-relay')!.token;
      expect(await adminA.getLeaders()).toEqual([
        expect.objectContaining({ role: 'orders-relay', leader: expect.objectContaining({ appId: 'same', term: termA }), candidates: [] }),
      ]);
      expect((await adminB.getLeaders()).map((info) => info.leader?.term)).toEqual([inB.app.get(LeaderService).term('orders-relay')!.token]);
      const health = await inA.locks.getHealth();
      expect(health).toMatchObject({ healthy: true, schema: 'current', appIdHeld: true });

      await adminA.setPermits('orders', 'write', 2);
      expect(await adminA.getPermits()).toEqual([{ name: 'orders', mode: 'write', permits: 2 }]);
      expect(await adminB.getPermits()).toEqual([]);
      expect(await inA.locks.tryLocks(['orders_WRITE'])).toBeGreaterThan(0); // a second writer in A only
      expect(await inB.locks.tryLocks(['orders_WRITE'])).toBe(0);
    });

    it('renew, fence, reap and prune in the place', async () => {
      const inA = await apps.start(db.url, { appId: 'upkeep', ...a, leaseMs: 1000, renewIntervalMs: 100, reaperIntervalMs: 200, logRetentionMs: 1 });
      const stamp = await inA.locks.tryLocks(['upkeep_WRITE']);
      await new Promise((resolve) => setTimeout(resolve, 1500)); // past the first lease: renewed in the place
      expect(inA.locks.isHeld(stamp)).toBe(true);
      const [grant] = await inA.app.get(LockAdminService).getGrants({ name: 'upkeep' });
      expect(grant).toMatchObject({ stamp });
      expect(grant!.leaseLeftMs).toBeGreaterThan(0);
      const dataSource = inA.app.get<DataSource>(getDataSourceToken());
      await dataSource.transaction((manager) => inA.locks.markBusinessDone(stamp, manager));
      const [entry] = await inA.app.get(LockAdminService).getLog({ stamp });
      expect(entry?.status).toBe('BUSINESS_DONE');
      expect(await inA.locks.reapStaleLocks()).toBe(0);
      await inA.locks.releaseLocks(stamp);
      // logRetentionMs: 1: the reaper task of the place prunes the ended row.
      await until(async () => (await inA.app.get(LockAdminService).getLog({ stamp })).length === 0);
    });

    it("wait in one place: the waiter is listed there only, and another place's release never grants it", async () => {
      const holderA = await apps.start(db.url, { appId: 'holder', ...a });
      const waiterA = await apps.start(db.url, { appId: 'waiter', ...a });
      const holderB = await apps.start(db.url, { appId: 'holder', ...b });
      const heldA = await holderA.locks.tryLocks(['shelf_WRITE']);
      const heldB = await holderB.locks.tryLocks(['shelf_WRITE']);
      expect(heldA).toBeGreaterThan(0);
      expect(heldB).toBeGreaterThan(0);
      const waiting = waiterA.locks.tryLocks(['shelf_WRITE'], { waitMs: 30_000 });
      let granted: number | undefined;
      void waiting.then((stamp) => (granted = stamp));
      await until(async () => (await waiterA.app.get(LockAdminService).listWaiters({ name: 'shelf' })).length === 1);
      expect(await holderB.app.get(LockAdminService).listWaiters()).toEqual([]);

      await holderB.locks.releaseLocks(heldB);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(granted).toBeUndefined();
      await holderA.locks.releaseLocks(heldA);
      expect(await waiting).toBeGreaterThan(heldA);
    });

    it('undo the migrations of one place: its objects go, the other places keep theirs; up again', async () => {
      const c: LockTablesOptions = dialect.name === 'PostgreSQL' ? { schema: 'locks_c' } : { tablePrefix: 'app_c_' };
      // Its own migrations table: TypeORM reverts the latest migration of its table, and the places share timestamps.
      const onlyC = new DataSource({
        ...dataSourceOptions(dialect, db.url),
        migrations: [...lockMigrations(c)],
        migrationsTableName: 'migrations_c',
      });
      await onlyC.initialize();
      try {
        await onlyC.runMigrations();
        const created = await objectsOf(dialect, db, c);
        expect(created.length).toBeGreaterThanOrEqual(7);
        const inA = await objectsOf(dialect, db, a);
        for (let i = 0; i < lockMigrations(c).length; i++) await onlyC.undoLastMigration();
        expect(await objectsOf(dialect, db, c)).toEqual([]);
        expect(await objectsOf(dialect, db, a)).toEqual(inA);
        const app = await apps.start(db.url, { appId: 'after-undo', ...a });
        expect(await app.locks.tryLocks(['undo_WRITE'])).toBeGreaterThan(0);
        await onlyC.runMigrations();
        expect(await objectsOf(dialect, db, c)).toEqual(created);
      } finally {
        await onlyC.destroy();
      }
    });
  });
}

DIALECTS[0]!.describe('Two schemas on one connection, wake-ups of a schema (PostgreSQL)', () => {
  let db: TestDatabase;
  const listeners: pg.Client[] = [];
  const apps = trackApps(createLockApp);
  beforeAll(async () => {
    db = await DIALECTS[0]!.createDatabase();
    const migrator = new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: [...lockMigrations({ schema: 'wake_a' }), ...lockMigrations({ schema: 'wake_b' })],
    });
    await migrator.initialize();
    await migrator.runMigrations();
    await migrator.destroy();
  });
  afterAll(async () => {
    await apps.closeAll();
    await Promise.all(listeners.map((client) => client.end()));
    await db?.drop();
  });

  it('run the same named prepared statement for two schemas on one connection, each in its own schema', async () => {
    const dataSource = new DataSource({ type: 'postgres', url: db.url, extra: { max: 1 } });
    await dataSource.initialize();
    try {
      for (const schema of ['wake_a', 'wake_b', 'wake_a']) {
        const runner = new PostgresStatementRunner(dataSource, {
          retry: { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0 },
          queryTimeoutMs: 10_000,
          tables: resolveLockTables({ schema }, 'postgres'),
        });
        const result = await runner.run<{ stamp: string }>('tryLocks', true, {
          name: 'nestjs_db_locks_try_acquire_one',
          text: TRY_ACQUIRE_ONE,
          values: ['pooled', 'test', `shared:${schema}`, 'R', null, 5, 1, 60_000],
        });
        expect(Number(result.rows[0]?.stamp)).toBeGreaterThan(0);
      }
      const held = await db.query<{ place: string; name: string }>(
        `SELECT 'wake_a' AS place, lock_name AS name FROM wake_a.locking
         UNION ALL SELECT 'wake_b', lock_name FROM wake_b.locking ORDER BY 1, 2`,
      );
      expect(held).toEqual([
        { place: 'wake_a', name: 'shared:wake_a' },
        { place: 'wake_a', name: 'shared:wake_a' },
        { place: 'wake_b', name: 'shared:wake_b' },
      ]);
    } finally {
      await dataSource.destroy();
    }
  });

  it("a release in one schema notifies that schema's channel only", async () => {
    const heard: Record<string, string[]> = { default: [], wake_a: [] };
    for (const [place, channel] of [['default', 'nestjs_db_locks'], ['wake_a', 'nestjs_db_locks:wake_a']] as const) {
      const client = await connectClient(db.url);
      listeners.push(client);
      client.on('notification', (message) => heard[place]!.push(message.payload ?? ''));
      await client.query(`LISTEN "${channel}"`);
    }
    const holder = await apps.start(db.url, { appId: 'holder', schema: 'wake_a' });
    const waiter = await apps.start(db.url, { appId: 'waiter', schema: 'wake_a' });
    const stamp = await holder.locks.tryLocks(['bell_WRITE']);
    const waiting = waiter.locks.tryLocks(['bell_WRITE'], { waitMs: 30_000 });
    await until(async () => (await waiter.app.get(LockAdminService).listWaiters()).length === 1);
    await holder.locks.releaseLocks(stamp);
    const granted = await waiting;
    expect(granted).toBeGreaterThan(stamp);
    // The release handed the name over: its notification names the waiter, the stamp and the rows' end
    // (chr(1) waiter stamp end).
    await until(() => heard.wake_a!.some((payload) => payload.startsWith('\u0001') && payload.split(' ')[1] === String(granted)));
    expect(heard.default).toEqual([]);
  });
});

describe('The place options are checked before anything runs', () => {
  it.each([
    [{ schema: 'Locks' }, /schema must be 1-47 lowercase letters/],
    [{ schema: 'locks;drop' }, /schema must be/],
    [{ schema: 'x'.repeat(48) }, /schema must be 1-47/],
    [{ schema: 'public' }, /omit the option/],
    [{ schema: 'pg_locks' }, /reserved/],
    [{ tablePrefix: '1app_' }, /tablePrefix must be 1-32 lowercase letters, digits and _, starting with a letter/],
    [{ schema: 'locks', tablePrefix: 'app_' }, /exclude each other/],
  ])('lockMigrations(%j) is refused', (options, message) => {
    expect(() => lockMigrations(options)).toThrow(LockConfigurationError);
    expect(() => lockMigrations(options)).toThrow(message);
  });

  it('LockModule refuses the option of the other dialect, naming the right one', () => {
    expect(() => LockModule.forRoot({ appId: 'a', tablePrefix: 'app_' })).toThrow(/tablePrefix is for MySQL\/MariaDB: on PostgreSQL use schema/);
    expect(() => LockModule.forRoot({ appId: 'a', dialect: 'mysql', schema: 'locks' })).toThrow(
      /schema is for PostgreSQL: on MySQL\/MariaDB use tablePrefix \(e\.g\. tablePrefix: 'locks_'\)/,
    );
    expect(() => lockEntities({ dialect: 'mysql', schema: 'locks' })).toThrow(LockConfigurationError);
  });

  it('without options, everything is as before: the same classes, names and entities', () => {
    expect(lockMigrations()).toBe(LOCK_MIGRATIONS);
    expect(lockMigrations({ schema: 'locks' })).toBe(lockMigrations({ schema: 'locks' }));
    expect(lockMigrations({ schema: 'locks' }).map((m) => m.name)).toEqual(LOCK_MIGRATIONS.map((m) => `locks.${m.name}`));
    expect(lockMigrations({ tablePrefix: 'app1_' }).map((m) => m.name)).toEqual(LOCK_MIGRATIONS.map((m) => `app1_${m.name}`));
    expect(lockMigrations({ schema: 'locks' }).map((M) => new M().name)).toEqual(LOCK_MIGRATIONS.map((m) => `locks.${m.name}`));
  });
});
