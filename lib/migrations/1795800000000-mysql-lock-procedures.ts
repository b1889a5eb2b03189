import { CREATE_MYSQL_LOCK_PROCEDURES, DROP_MYSQL_LOCK_PROCEDURES } from './sql/mysql-lock.procedures.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * MySQL and MariaDB: a grant and a release each become one stored procedure call (`locking_try_acquire`,
 * `locking_release`), one round trip instead of seven and six; same statements, same order, same decisions. `down`
 * drops them, and the library sends the statements one by one again. Safe while instances run, of this version or
 * the previous ones. Needs the `CREATE ROUTINE` privilege (and the lock user `EXECUTE`: both come with `ALL` on the
 * database). Nothing to do on PostgreSQL.
 * @publicApi
 */
export class MysqlLockProcedures1795800000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'MysqlLockProcedures1795800000000';
  protected readonly upStatements: readonly string[] = [];
  protected readonly downStatements: readonly string[] = [];
  protected override readonly mysqlUpStatements = CREATE_MYSQL_LOCK_PROCEDURES;
  protected override readonly mysqlDownStatements = DROP_MYSQL_LOCK_PROCEDURES;
}
