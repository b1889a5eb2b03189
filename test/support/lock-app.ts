import { type DynamicModule, type INestApplicationContext, Module, type Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { lockEntities, LockModule, LockService, type LockModuleOptions, type LockTablesOptions } from 'nestjs-db-locks';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** Options of one test instance: at least its `appId`. */
export type TestLockOptions = Partial<LockModuleOptions> & LockTablesOptions & { appId: string };

/** A Nest application context wired the way a user wires it: TypeORM + schedule + LockModule.forRoot. */
export interface LockApp {
  readonly app: INestApplicationContext;
  readonly locks: LockService;
  close(): Promise<void>;
}

/**
 * The imports every test application uses: TypeORM on `url` (its own pool), ScheduleModule, LockModule. A `mysql://`
 * URL opens a MariaDB/MySQL DataSource (UTC times) and configures LockModule's dialect to match. The entities are
 * given, not auto-loaded: @nestjs/typeorm keeps the entities registered for the default DataSource process-wide, and a
 * file that boots both dialects would hand one dialect's entities to the other.
 */
export function lockAppImports(url: string, options: TestLockOptions, poolSize = 4): DynamicModule[] {
  const mysql = url.startsWith('mysql:');
  if (!mysql) ({ url, options } = throughSuitePgBouncer(url, options));
  const entities = [...lockEntities({ schema: options.schema, tablePrefix: options.tablePrefix, dialect: mysql ? 'mysql' : 'postgres' })];
  return [
    mysql
      ? TypeOrmModule.forRoot({ type: 'mariadb', url, extra: { connectionLimit: poolSize }, timezone: 'Z', entities })
      : TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: poolSize }, entities }),
    ScheduleModule.forRoot(),
    LockModule.forRoot(mysql ? { dialect: 'mysql', ...options } : options),
  ];
}

/**
 * When the suite runs through PgBouncer (`NDL_TEST_PGBOUNCER`, see global-setup.mjs): a URL of the suite's server
 * through it, and in transaction mode `directUrl` on the server itself (in session mode, `pooler: 'session'`). Other URLs (a TCP proxy of a fault spec) and
 * options that give `directUrl` are kept.
 */
function throughSuitePgBouncer(url: string, options: TestLockOptions): { url: string; options: TestLockOptions } {
  const port = process.env.NDL_TEST_PGBOUNCER_PORT;
  const target = new URL(url);
  if (!port || target.port !== new URL(process.env.NDL_TEST_ADMIN_URL!).port || options.directUrl) return { url, options };
  target.hostname = '127.0.0.1';
  target.port = port;
  // A pooler's session mode cannot be proven: it is declared.
  const direct = process.env.NDL_TEST_PGBOUNCER === 'transaction' ? { directUrl: url } : { pooler: 'session' as const };
  return { url: target.toString(), options: { ...direct, ...options } };
}

/** Boots one application instance (one `appId`, its own connection pool) on `url`. */
export async function createLockApp(
  url: string,
  options: TestLockOptions,
  poolSize = 4,
  providers: Type[] = [],
): Promise<LockApp> {
  @Module({ imports: lockAppImports(url, options, poolSize), providers })
  class TestAppModule {}

  const moduleRef = await Test.createTestingModule({ imports: [TestAppModule] }).compile();
  moduleRef.useLogger(false);
  const app = await moduleRef.init();
  return { app, locks: app.get(LockService), close: () => app.close() };
}

/** Two instances, `appId` 'one' and 'two', on a fresh database of their own. */
export interface TwoInstances {
  readonly db: TestDatabase;
  readonly one: LockApp;
  readonly two: LockApp;
}

/**
 * Registers the enclosing describe block's hooks: a fresh database with instances 'one' and 'two' opened before its
 * tests, closed and dropped after them. The returned object reads them (from the first test on).
 */
export function useTwoInstances(createDatabase: () => Promise<TestDatabase> = createTestDatabase): TwoInstances {
  let opened: TwoInstances | undefined;
  const get = (): TwoInstances => {
    if (!opened) throw new Error('useTwoInstances: read before the beforeAll hook ran');
    return opened;
  };
  beforeAll(async () => {
    const db = await createDatabase();
    const one = await createLockApp(db.url, { appId: 'one' });
    opened = { db, one, two: await createLockApp(db.url, { appId: 'two' }) };
  });
  afterAll(async () => {
    if (!opened) return;
    await Promise.all([opened.one.close(), opened.two.close()]);
    await opened.db.drop();
  });
  return {
    get db() {
      return get().db;
    },
    get one() {
      return get().one;
    },
    get two() {
      return get().two;
    },
  };
}

/**
 * The applications a test file starts: `start` opens one through `open` and remembers it, `closeAll` (for an
 * `afterEach`) closes every one started since.
 */
export function trackApps<A extends { close(): Promise<void> }, P extends unknown[]>(open: (...args: P) => Promise<A>) {
  const apps: A[] = [];
  return {
    async start(...args: P): Promise<A> {
      const app = await open(...args);
      apps.push(app);
      return app;
    },
    async closeAll(): Promise<void> {
      await Promise.all(apps.splice(0).map((app) => app.close()));
    },
  };
}
