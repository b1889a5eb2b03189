import { DOWNGRADE_LOCK_SCHEMA_V6, UPGRADE_LOCK_SCHEMA_V6 } from './sql/postgres-lock.schema-v6.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Checks a group of locks in one statement: `locking_try_acquire` takes a batch's advisory locks at once and decides
 * a group of several locks with one query over its names (a group of one keeps its per-name check). Same decisions
 * as before, name for name. `down` restores the previous function. Safe while instances run, of this version or the
 * previous ones: the signature is unchanged.
 * @publicApi
 */
export class GroupLockChecks1795700000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'GroupLockChecks1795700000000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V6;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V6;
}
