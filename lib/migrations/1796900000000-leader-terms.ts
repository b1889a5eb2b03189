import {
  CREATE_MYSQL_LEADER_TERMS,
  CREATE_POSTGRES_LEADER_TERMS,
  DROP_MYSQL_LEADER_TERMS,
  DROP_POSTGRES_LEADER_TERMS,
} from './sql/leader-terms.schema.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Leader election: the table `locking_leaders` keeps, per role, the term of its latest election (the fencing token of
 * `LeaderTerm`, which grows with every election, across replicas and restarts), the stamp of the grant that won it,
 * and the winner (`app_id`, `instance`, `elected`). Only `LeaderService` and `@Leader` use it: instances of the
 * previous version run on unchanged. `down` drops the table (the terms start again from 1 afterwards).
 * @publicApi
 */
export class LeaderTerms1796900000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'LeaderTerms1796900000000';
  protected readonly upStatements = CREATE_POSTGRES_LEADER_TERMS;
  protected readonly downStatements = DROP_POSTGRES_LEADER_TERMS;
  protected override readonly mysqlUpStatements = CREATE_MYSQL_LEADER_TERMS;
  protected override readonly mysqlDownStatements = DROP_MYSQL_LEADER_TERMS;
}
