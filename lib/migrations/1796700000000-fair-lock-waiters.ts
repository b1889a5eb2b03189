import { CREATE_MYSQL_LOCK_PROCEDURES_V3, DROP_MYSQL_LOCK_PROCEDURES_V3 } from './sql/mysql-lock.procedures-v3.sql.js';
import { DOWNGRADE_LOCK_SCHEMA_V7, UPGRADE_LOCK_SCHEMA_V7 } from './sql/postgres-lock.schema-v7.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Every waiter in one order, writers included, on both dialects: a write yields to every live waiter of its names
 * registered before it (as a read already yielded to the earlier waiting writers), so the waiters of one process no
 * longer overtake, again and again, an earlier waiter of another (issue 37: on MariaDB a process's own waiters are woken
 * first). A request yields only to an earlier waiter that could be served (none of its other names held against it),
 * so a caller holding what that waiter waits for is not stalled. New versions of the functions (PostgreSQL) and
 * procedures (MySQL, MariaDB) that check names; same signatures, same rows. `down` puts the previous versions back. Safe while instances run, of this version or the
 * previous ones: on MySQL a grant that finds a procedure missing for the instant it is replaced sends its statements
 * one by one.
 * @publicApi
 */
export class FairLockWaiters1796700000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'FairLockWaiters1796700000000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V7;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V7;
  protected override readonly mysqlUpStatements = CREATE_MYSQL_LOCK_PROCEDURES_V3;
  protected override readonly mysqlDownStatements = DROP_MYSQL_LOCK_PROCEDURES_V3;
}
