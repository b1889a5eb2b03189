import { DOWNGRADE_LOCK_SCHEMA_V3, UPGRADE_LOCK_SCHEMA_V3 } from './sql/postgres-lock.schema-v3.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Makes releases take the log row before the lock rows, the order of the reaper and of start-up recovery, so that a
 * release racing a reap can no longer deadlock (same signatures and results); `down` restores the second version.
 * Safe while instances run: a call in flight finishes with the function version it started with.
 * @publicApi
 */
export class OrderedLockRelease1795400000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'OrderedLockRelease1795400000000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V3;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V3;
}
