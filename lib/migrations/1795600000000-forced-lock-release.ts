import { DOWNGRADE_LOCK_SCHEMA_V5, UPGRADE_LOCK_SCHEMA_V5 } from './sql/postgres-lock.schema-v5.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Audited forced release: `locking_log` gets `ended_by` and `end_reason` and the status `FORCED`, `locking_waiters`
 * records when each waiter registered, and `locking_force_release` frees any live grant (`LockAdminService`). `down`
 * drops them (a FORCED row becomes REAPED). Safe while instances run, of this version or the previous one: the engine's
 * other functions are unchanged.
 * @publicApi
 */
export class ForcedLockRelease1795600000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'ForcedLockRelease1795600000000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V5;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V5;
}
