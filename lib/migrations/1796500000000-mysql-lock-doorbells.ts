import { CREATE_MYSQL_LOCK_DOORBELLS, DROP_MYSQL_LOCK_DOORBELLS } from './sql/mysql-lock-doorbells.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * MySQL and MariaDB: doorbells. Adds `locking_doorbells` (the sleeping connection of each instance that has waiters)
 * and a second version of `locking_release` that answers, in the same round trip, the doorbells of the other
 * instances waiting for the names it freed: the releasing instance wakes them (`KILL QUERY` of their sleep) and their
 * waiters try at once, where they polled every 20 ms. `down` puts the first release back and drops the table. Safe
 * while instances run, of this version or the previous ones (older instances never read the table, and their waiters
 * keep polling). Nothing to do on PostgreSQL (LISTEN/NOTIFY).
 * @publicApi
 */
export class MysqlLockDoorbells1796500000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'MysqlLockDoorbells1796500000000';
  protected readonly upStatements: readonly string[] = [];
  protected readonly downStatements: readonly string[] = [];
  protected override readonly mysqlUpStatements = CREATE_MYSQL_LOCK_DOORBELLS;
  protected override readonly mysqlDownStatements = DROP_MYSQL_LOCK_DOORBELLS;
}
