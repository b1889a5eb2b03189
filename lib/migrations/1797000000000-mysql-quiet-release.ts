import { CREATE_MYSQL_QUIET_RELEASE, DROP_MYSQL_QUIET_RELEASE } from './sql/mysql-lock-release-quiet.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * MySQL and MariaDB: a release that answers without a result set (issue 41). Adds `locking_release_quiet`, which an
 * instance calls to release a grant it made (it knows the grant's names, for its own waiters): the release of
 * `locking_release` without reading the names back, answering a row only when it names doorbells of other instances
 * (or on MySQL), else just the OK packet of its `CALL` (on MariaDB, about 80 µs less server time per release).
 * `locking_release` is unchanged; `down` drops the new procedure. Safe while instances run, of this version or the
 * previous ones (those never call it; a release that finds it missing calls `locking_release`). Nothing to do on
 * PostgreSQL.
 * @publicApi
 */
export class MysqlQuietRelease1797000000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'MysqlQuietRelease1797000000000';
  protected readonly upStatements: readonly string[] = [];
  protected readonly downStatements: readonly string[] = [];
  protected override readonly mysqlUpStatements = CREATE_MYSQL_QUIET_RELEASE;
  protected override readonly mysqlDownStatements = DROP_MYSQL_QUIET_RELEASE;
}
