import type { DataSource } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';

/** The databases the lock engine runs on: PostgreSQL, or MySQL and MariaDB (one dialect, InnoDB). @internal */
export type LockDialect = 'postgres' | 'mysql';

/** The dialect of a TypeORM DataSource; a `LockConfigurationError` for any other database. @internal */
export function lockDialectOf(dataSource: Pick<DataSource, 'options'>): LockDialect {
  const type = dataSource.options.type;
  if (type === 'postgres') return 'postgres';
  if (type === 'mysql' || type === 'mariadb') return 'mysql';
  throw new LockConfigurationError(
    `nestjs-db-locks needs a PostgreSQL, MySQL or MariaDB DataSource; "${String(type)}" is not supported`,
  );
}

/** True for a MySQL or MariaDB DataSource. @internal */
export function isMysqlDataSource(dataSource: Pick<DataSource, 'options'>): boolean {
  return dataSource.options.type === 'mysql' || dataSource.options.type === 'mariadb';
}
