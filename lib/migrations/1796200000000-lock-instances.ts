import {
  CREATE_MYSQL_INSTANCES,
  CREATE_POSTGRES_INSTANCES,
  DROP_MYSQL_INSTANCES,
  DROP_POSTGRES_INSTANCES,
} from './sql/lock-instances.schema.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Adds `locking_instances`: the process holding each app id records who it is, so that a restart frees the previous
 * life's grants at once only when it can prove that life is over (same machine, process gone); otherwise they end
 * with their leases, after their holder's signal fired. Both dialects. Safe while instances run: instances of older
 * versions never read it, and one of this version started next to them finds no row and leaves recovery to the leases.
 * @publicApi
 */
export class LockInstances1796200000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'LockInstances1796200000000';
  protected readonly upStatements = CREATE_POSTGRES_INSTANCES;
  protected readonly downStatements = DROP_POSTGRES_INSTANCES;
  protected override readonly mysqlUpStatements = CREATE_MYSQL_INSTANCES;
  protected override readonly mysqlDownStatements = DROP_MYSQL_INSTANCES;
}
