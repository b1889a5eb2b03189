import {
  ADD_MYSQL_HAND_OVER_COLUMNS,
  CREATE_MYSQL_HAND_OVER_RELEASES,
  DROP_MYSQL_HAND_OVER_COLUMNS,
  DROP_MYSQL_HAND_OVER_RELEASES,
} from './sql/mysql-lock-hand-over.sql.js';
import { CREATE_MYSQL_LOCK_PROCEDURES_V5, DROP_MYSQL_LOCK_PROCEDURES_V5 } from './sql/mysql-lock.procedures-v5.sql.js';
import { DOWNGRADE_LOCK_SCHEMA_V9, UPGRADE_LOCK_SCHEMA_V9 } from './sql/postgres-lock.schema-v9.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * PostgreSQL: a release hands the name it frees over to the next waiter within its own durable commit, and wakes
 * it with the grant (issue 51: a hot name served at the speed of one commit per hand-over). Waiter rows get the
 * columns a grant needs; new versions of the release and acquisition functions (same signatures) and two new
 * functions (`locking_hand_over`, `locking_reap_lapsed`). `down` puts the previous functions back and drops them.
 * Safe while instances run, of this version or the previous ones: an older instance's waiters are never handed a
 * grant (they are notified as before). On MySQL and MariaDB the same hand-over, for a waiter that writes one name:
 * waiter columns and releases that hand a freed name to its first waiter (`mysql-lock-hand-over.sql.ts`), and the
 * fifth version of the acquisition procedures (`mysql-lock.procedures-v5.sql.ts`: a waiter handed a grant is refused,
 * and a waiter's attempt on one lock is refused on committed rows before it locks or writes its name's row); `down`
 * puts the previous versions back and drops the columns.
 * @publicApi
 */
export class LockHandOver1797300000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'LockHandOver1797300000000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V9;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V9;
  // In this order: no release hands a grant over before every acquisition refuses a waiter handed one.
  protected override readonly mysqlUpStatements = [
    ...ADD_MYSQL_HAND_OVER_COLUMNS,
    ...CREATE_MYSQL_LOCK_PROCEDURES_V5,
    ...CREATE_MYSQL_HAND_OVER_RELEASES,
  ];
  protected override readonly mysqlDownStatements = [
    ...DROP_MYSQL_HAND_OVER_RELEASES,
    ...DROP_MYSQL_LOCK_PROCEDURES_V5,
    ...DROP_MYSQL_HAND_OVER_COLUMNS,
  ];
}
