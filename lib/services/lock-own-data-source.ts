import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { lockEntities } from '../entities/lock-entities.factory.js';
import { LockConfigurationError, type LockError } from '../errors/index.js';
import { lockMigrations } from '../migrations/lock-migrations.factory.js';
import { toMysqlLockError } from '../store/mysql/mysql-error.util.js';
import { toLockError } from '../store/postgres/pg-error.util.js';
import type { LockDatabaseUrl } from '../utils/lock-url.util.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { retryingStartup } from '../utils/startup-retry.util.js';

/** TypeORM's migrations table, as `nestjs-db-locks migrate` names it by default: neither runs a migration twice. */
const MIGRATIONS_TABLE = 'migrations';

/** `mysql2`'s connection timeout when none is given (ms). */
const MYSQL2_CONNECT_TIMEOUT_MS = 10_000;

/** What the TypeORM drivers keep of their pools (undocumented: each read is guarded). */
interface OwnPools {
  /** `pg`'s pool (PostgreSQL). */
  readonly master?: { readonly options?: { connectionTimeoutMillis?: number } };
  /** `mysql2`'s pool (MySQL, MariaDB): each new connection copies `connectionConfig`. */
  readonly pool?: { readonly config?: { readonly connectionConfig?: { connectTimeout?: number } } };
}

/**
 * The DataSource the library opens for itself when `LockModule.forRoot({ url })` is given: TypeORM on the library's
 * own entities and migrations, invisible to the application. It is destroyed in `onApplicationShutdown`, after
 * `beforeApplicationShutdown` has let every locked call release its grants.
 * @internal
 */
export class LockOwnDataSource implements OnApplicationShutdown {
  private readonly logger = new Logger('LockService');

  private constructor(readonly dataSource: DataSource) {}

  /**
   * Connects on `options.url` (through transient failures, for up to `startupTimeoutMs`; each attempt waits for what
   * is left of it, `queryTimeoutMs` at most) and, with `migrationsRun`, applies the lock migrations not run yet.
   * @throws LockStartupTimeoutError when the database did not answer within `startupTimeoutMs`.
   * @throws LockConfigurationError when the options have no `url` (a `forRootAsync` factory that gave none).
   * @throws LockStoreError when the database cannot be reached or a migration fails (the pool is closed again); a
   *   TypeORM error that is no driver's is kept as its `cause` too.
   */
  static async open(options: ResolvedLockOptions): Promise<LockOwnDataSource> {
    const { url } = options;
    if (url === undefined) {
      throw new LockConfigurationError(
        'LockModule.forRootAsync({ ownConnection: true }) runs the library on a connection of its own: its factory must ' +
          "return url (e.g. useFactory: (config: ConfigService) => ({ appId, url: config.get('DATABASE_URL') }))",
      );
    }
    const logger = new Logger('LockService');
    const { startupTimeoutMs, queryTimeoutMs: maxAttemptMs } = options;
    const deadline = performance.now() + startupTimeoutMs;
    const what = 'the first connection of the lock DataSource (LockModule option url)';
    const step = { what, deadline, startupTimeoutMs, maxAttemptMs, logger };
    const dataSource = await retryingStartup(step, async (attemptMs) => {
      // The drivers' own connection timeout bounds the attempt (pg has none by default): nothing of it is left behind.
      const attempt = newDataSource(url, options, attemptMs);
      try {
        await attempt.initialize();
        return attempt;
      } catch (error) {
        await attempt.driver.disconnect().catch(() => undefined); // a pool that never connected
        throw lockErrorOf(url, error, 'connect the lock DataSource (LockModule option url)');
      }
    });
    if (options.migrationsRun) {
      try {
        await dataSource.runMigrations();
      } catch (error) {
        await dataSource.destroy().catch(() => undefined);
        throw lockErrorOf(url, error, 'run the lock migrations (LockModule option migrationsRun)');
      }
    }
    restoreConnectTimeout(dataSource, url);
    return new LockOwnDataSource(dataSource);
  }

  /** Closes the pool: every connection the library opened on `url` is gone once it resolves. */
  async onApplicationShutdown(): Promise<void> {
    if (!this.dataSource.isInitialized) return;
    await this.dataSource.destroy().catch((error: unknown) => {
      this.logger.warn(`Closing the lock DataSource failed: ${(error as Error).message}`);
    });
  }
}

/**
 * The library's own DataSource on `url`, not connected yet, whose connections give up after `connectTimeoutMs`
 * without an answer.
 * @throws LockConfigurationError when the driver of the URL's scheme is not installed (TypeORM loads it here).
 */
function newDataSource(url: LockDatabaseUrl, options: ResolvedLockOptions, connectTimeoutMs: number): DataSource {
  try {
    return new DataSource(ownDataSourceOptions(url, options, connectTimeoutMs));
  } catch (error) {
    if ((error as Error | null)?.name !== 'DriverPackageNotInstalledError') throw error;
    const driver = url.dialect === 'mysql' ? 'mysql2' : 'pg';
    throw new LockConfigurationError(
      `LockModule option url reaches ${url.dialect === 'mysql' ? 'MySQL/MariaDB' : 'PostgreSQL'}, whose driver is not ` +
        `installed: run \`npm install ${driver}\``,
      { cause: error },
    );
  }
}

/** TypeORM's options for the library's own DataSource: its entities and migrations, and the dialect's settings. */
function ownDataSourceOptions(
  url: LockDatabaseUrl,
  options: ResolvedLockOptions,
  connectTimeoutMs: number,
): DataSourceOptions {
  const common = {
    url: url.driverUrl,
    logging: false,
    migrations: [...lockMigrations(options.tables)],
    migrationsTableName: MIGRATIONS_TABLE,
  };
  if (url.dialect === 'mysql') {
    return {
      ...common,
      type: 'mysql', // MariaDB too, through the same mysql2 driver
      entities: [...lockEntities({ ...options.tables, dialect: 'mysql' })],
      timezone: 'Z', // the lock tables hold UTC times
      connectTimeout: connectTimeoutMs,
    };
  }
  return {
    ...common,
    type: 'postgres',
    entities: [...lockEntities(options.tables)],
    connectTimeoutMS: connectTimeoutMs,
    // How pg_stat_activity names the pool's connections (the kept sessions name themselves alike).
    extra: { application_name: `nestjs-db-locks ${options.appId} ${options.instance}`.slice(0, 63) },
  };
}

/**
 * Gives the pool of the started DataSource the drivers' own connection timeout back (none for `pg`, 10 s for
 * `mysql2`): the start-up attempt's bound was for start-up only. Later connections are had within `queryTimeoutMs`
 * by the library's checkouts, as on a DataSource of the application's.
 */
function restoreConnectTimeout(dataSource: DataSource, url: LockDatabaseUrl): void {
  const driver = dataSource.driver as unknown as OwnPools;
  if (url.dialect === 'mysql') {
    const config = driver.pool?.config?.connectionConfig;
    if (config) config.connectTimeout = MYSQL2_CONNECT_TIMEOUT_MS;
  } else if (driver.master?.options) {
    delete driver.master.options.connectionTimeoutMillis;
  }
}

/** A driver's error as the dialect's `LockStoreError` (or `LockServerReadOnlyError`). */
function lockErrorOf(url: LockDatabaseUrl, error: unknown, operation: string): LockError {
  return url.dialect === 'mysql' ? toMysqlLockError(error, operation, false) : toLockError(error, operation, false);
}
