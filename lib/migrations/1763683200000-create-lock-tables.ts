import { CREATE_MYSQL_LOCK_SCHEMA, DROP_MYSQL_LOCK_SCHEMA } from './sql/mysql-lock.schema.sql.js';
import { CREATE_LOCK_SCHEMA, DROP_LOCK_SCHEMA } from './sql/postgres-lock.schema.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Creates the lock engine's sequence, tables and functions (on MySQL and MariaDB: its tables, in their final form).
 * `down` drops them all (and every lock held in them). Run through `lockMigrations({ schema })`, it first creates the
 * schema when missing (`down` leaves it).
 * @publicApi
 */
export class CreateLockTables1763683200000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'CreateLockTables1763683200000';
  protected readonly upStatements = CREATE_LOCK_SCHEMA;
  protected readonly downStatements = DROP_LOCK_SCHEMA;
  protected override readonly mysqlUpStatements = CREATE_MYSQL_LOCK_SCHEMA;
  protected override readonly mysqlDownStatements = DROP_MYSQL_LOCK_SCHEMA;
  protected override readonly opensSchema = true;
}
