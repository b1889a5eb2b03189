import { CREATE_MYSQL_LOCK_PROCEDURES_V4, DROP_MYSQL_LOCK_PROCEDURES_V4 } from './sql/mysql-lock.procedures-v4.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * MySQL and MariaDB: every grant writes its names' rows, and the app id's claim gets a lease (issue 49: Galera
 * clusters). A Galera cluster certifies only the rows a transaction writes; the grant procedures wrote their names'
 * rows back unchanged (a row lock on one server, nothing at all to certify on a cluster), so two nodes granted one
 * name to two holders. The fourth version of the acquisition procedures counts each grant in `locking_names.grants`;
 * `locking_instances` gets `lease_holder`, `lease_node` and `lease_until`, the claim of an app id across the nodes.
 * Same signatures, same decisions. `down` puts the third version back and drops the columns. Safe while instances run,
 * of this version or the previous ones (a grant that finds a procedure missing for the instant it is replaced sends
 * its statements one by one). Nothing to do on PostgreSQL.
 * @publicApi
 */
export class MysqlCertifiedWrites1797200000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'MysqlCertifiedWrites1797200000000';
  protected readonly upStatements: readonly string[] = [];
  protected readonly downStatements: readonly string[] = [];
  protected override readonly mysqlUpStatements = CREATE_MYSQL_LOCK_PROCEDURES_V4;
  protected override readonly mysqlDownStatements = DROP_MYSQL_LOCK_PROCEDURES_V4;
}
