import { DOWNGRADE_LOCK_SCHEMA_V4, UPGRADE_LOCK_SCHEMA_V4 } from './sql/postgres-lock.schema-v4.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Puts waiters in a total order: `locking_waiters` gets a registration sequence, and a reader yields only to the
 * waiting writers registered before it (no cycle of waiters holding each other off). `down` restores the second
 * version's acquisition functions and drops the column. Safe while instances run: a call in flight finishes with the
 * function version it started with.
 * @publicApi
 */
export class OrderedLockWaiters1795500000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'OrderedLockWaiters1795500000000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V4;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V4;
}
