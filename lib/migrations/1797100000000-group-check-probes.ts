import { DOWNGRADE_LOCK_SCHEMA_V8, UPGRADE_LOCK_SCHEMA_V8 } from './sql/postgres-lock.schema-v8.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * PostgreSQL: a grant of a group of several locks looks its names up one by one in the index (issue 41). The group
 * check of `locking_try_acquire` read the whole `locking` table at every call (a hashed subplan): its cost grew with
 * the locks the fleet holds and with the rows released since the last VACUUM. Same signature, same decisions; `down`
 * puts the previous function back. Safe while instances run, of this version or the previous ones. Nothing to do on
 * MySQL and MariaDB.
 * @publicApi
 */
export class GroupCheckProbes1797100000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'GroupCheckProbes1797100000000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V8;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V8;
}
