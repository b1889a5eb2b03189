import type { DataSource } from 'typeorm';
import { lockDialectOf } from '../store/lock-dialect.util.js';
import { MysqlStatementRunner } from '../store/mysql/mysql-statement.runner.js';
import { PostgresStatementRunner } from '../store/postgres/postgres-statement.runner.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import type { JobRunStore } from './job-runs.store.js';
import { MysqlJobRunStore } from './mysql-job-runs.store.js';
import { PostgresJobRunStore } from './postgres-job-runs.store.js';

/** The run-history store of the DataSource's dialect, on its own statement runner (same pool). @internal */
export function createJobRunStore(dataSource: DataSource, options: ResolvedLockOptions): JobRunStore {
  return lockDialectOf(dataSource) === 'mysql'
    ? new MysqlJobRunStore(new MysqlStatementRunner(dataSource, options))
    : new PostgresJobRunStore(new PostgresStatementRunner(dataSource, options));
}
