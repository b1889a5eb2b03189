import { DOWNGRADE_LOCK_SCHEMA_V2, UPGRADE_LOCK_SCHEMA_V2 } from './sql/postgres-lock.schema-v2.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Replaces the acquisition and release functions with faster ones (same signatures and semantics) and drops the
 * CHECK constraints of `locking.mode` and `locking_log.status` (the functions check what they write); `down` restores
 * the first versions and the CHECKs. Safe while instances run: the ALTERs wait a moment for statements in flight,
 * and a call in flight finishes with the function version it started with.
 * @publicApi
 */
export class FasterLockFunctions1795247677000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'FasterLockFunctions1795247677000';
  protected readonly upStatements = UPGRADE_LOCK_SCHEMA_V2;
  protected readonly downStatements = DOWNGRADE_LOCK_SCHEMA_V2;
}
