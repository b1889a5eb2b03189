import { CREATE_MYSQL_LOCK_PROCEDURES_V2, DROP_MYSQL_LOCK_PROCEDURES_V2 } from './sql/mysql-lock.procedures-v2.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * MySQL and MariaDB: the procedures' second version. A grant of one lock calls a twin of the group procedure,
 * `locking_try_acquire_one` (no JSON to parse, fewer reads); `locking_try_acquire` refuses a busy group on committed
 * rows before it locks the names' rows; `locking_try_acquire_batch` decides the groups of several concurrent callers
 * of one process in one call and one commit. Same decisions, same rows; `locking_release` is unchanged. `down` drops
 * the twin and the batch procedure and puts the first version of `locking_try_acquire` back. Safe while instances run, of this version or the previous ones (a grant that finds
 * a procedure missing for the instant it is replaced sends its statements one by one). Nothing to do on PostgreSQL.
 * @publicApi
 */
export class FasterMysqlLockProcedures1796400000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'FasterMysqlLockProcedures1796400000000';
  protected readonly upStatements: readonly string[] = [];
  protected readonly downStatements: readonly string[] = [];
  protected override readonly mysqlUpStatements = CREATE_MYSQL_LOCK_PROCEDURES_V2;
  protected override readonly mysqlDownStatements = DROP_MYSQL_LOCK_PROCEDURES_V2;
}
