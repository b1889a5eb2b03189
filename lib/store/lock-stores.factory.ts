import type { DataSource } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import type { JobRunStore } from './job-runs.store.js';
import type { LeaderTermStore } from './leader-terms.store.js';
import { MysqlLeaderTermStore } from './mysql/mysql-leader-terms.store.js';
import { PostgresLeaderTermStore } from './postgres/postgres-leader-terms.store.js';
import type { LockAdminStore } from './lock-admin.store.js';
import { lockDialectOf } from './lock-dialect.util.js';
import type { LockStore } from './lock.store.js';
import { MysqlJobRunStore } from './mysql/mysql-job-runs.store.js';
import { MysqlLockAdminStore } from './mysql/mysql-lock-admin.store.js';
import { MysqlLockStore } from './mysql/mysql-lock.store.js';
import { MysqlStatementRunner } from './mysql/mysql-statement.runner.js';
import { PostgresJobRunStore } from './postgres/postgres-job-runs.store.js';
import { PostgresLockAdminStore } from './postgres/postgres-lock-admin.store.js';
import { PostgresLockStore } from './postgres/postgres-lock.store.js';
import { PostgresStatementRunner } from './postgres/postgres-statement.runner.js';

/**
 * The lock store of the DataSource's dialect; a `LockConfigurationError` for a database that is neither PostgreSQL
 * nor MySQL/MariaDB.
 * @internal
 */
export function createLockStore(dataSource: DataSource, options: ResolvedLockOptions, telemetry: LockTelemetry): LockStore {
  if (lockDialectOf(dataSource) !== 'mysql') return new PostgresLockStore(dataSource, options, telemetry);
  if (options.directUrl !== undefined || options.pooler !== 'detect') {
    throw new LockConfigurationError(
      'LockModule options directUrl and pooler are for PostgreSQL: remove them from the MySQL/MariaDB configuration',
    );
  }
  return new MysqlLockStore(dataSource, options, telemetry);
}

/**
 * The admin store of the DataSource's dialect. `store`, the instance's own lock store when there is one, lets a
 * forced release on MySQL wake this process's waiters at once (PostgreSQL notifies every process).
 * @internal
 */
export function createLockAdminStore(
  dataSource: DataSource,
  options: ResolvedLockOptions,
  store?: LockStore,
): LockAdminStore {
  if (lockDialectOf(dataSource) === 'mysql') {
    const wakeups = store instanceof MysqlLockStore ? store.wakeups : undefined;
    return new MysqlLockAdminStore(new MysqlStatementRunner(dataSource, options), dataSource, wakeups);
  }
  return new PostgresLockAdminStore(new PostgresStatementRunner(dataSource, options), dataSource);
}

/** The run-history store of the DataSource's dialect, on its own statement runner (same pool). @internal */
export function createJobRunStore(dataSource: DataSource, options: ResolvedLockOptions): JobRunStore {
  return lockDialectOf(dataSource) === 'mysql'
    ? new MysqlJobRunStore(new MysqlStatementRunner(dataSource, options))
    : new PostgresJobRunStore(new PostgresStatementRunner(dataSource, options));
}

/** The leader-election terms store of the DataSource's dialect, on its own statement runner (same pool). @internal */
export function createLeaderTermStore(dataSource: DataSource, options: ResolvedLockOptions): LeaderTermStore {
  return lockDialectOf(dataSource) === 'mysql'
    ? new MysqlLeaderTermStore(new MysqlStatementRunner(dataSource, options))
    : new PostgresLeaderTermStore(new PostgresStatementRunner(dataSource, options));
}
