// The database of a test's child process (a contender, a soak worker): PostgreSQL or MariaDB as DATABASE_URL says,
// through a pool of four connections, as LockModule's options need to know it (`dialect`).
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule } from 'nestjs-db-locks';

/** Whether DATABASE_URL names a MySQL/MariaDB server (else PostgreSQL). */
export const isMysql = (process.env.DATABASE_URL ?? '').startsWith('mysql:');

/** The TypeORM module of the child's DataSource, on DATABASE_URL. */
export function childDatabaseModule() {
  const url = process.env.DATABASE_URL;
  return isMysql
    ? TypeOrmModule.forRoot({ type: 'mariadb', url, timezone: 'Z', extra: { connectionLimit: 4 } })
    : TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: 4 } });
}

/** LockModule's `dialect` option for that database. */
export const lockDialect = isMysql ? { dialect: /** @type {const} */ ('mysql') } : {};

/**
 * The imports of a child's Nest application: its DataSource on DATABASE_URL, the scheduler, and LockModule with
 * `options` (the dialect's option added).
 * @param {import('nestjs-db-locks').LockModuleOptions} options
 */
export function childLockImports(options) {
  return [childDatabaseModule(), ScheduleModule.forRoot(), LockModule.forRoot({ ...lockDialect, ...options })];
}
