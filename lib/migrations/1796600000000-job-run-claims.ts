import {
  CREATE_JOB_CLAIMS,
  CREATE_MYSQL_JOB_CLAIMS,
  DROP_JOB_CLAIMS,
  DROP_MYSQL_JOB_CLAIMS,
} from './sql/job-claims.schema.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Scheduled jobs, claims made safe: `locking_job_run.claimable_until` records until when a tick can still be claimed
 * (pruning keeps its row until then, whatever the retention), and on PostgreSQL `locking_claim_job_tick` claims a tick
 * in one round trip with the claims of one job serialised (a job with shared locks never runs twice at once) and
 * idempotent per grant (a claim whose answer was lost is made again safely). Instances of the previous version keep
 * claiming with their own statement (their rows have no `claimable_until`: pruned by their tick, as before); run the
 * migration before the new version. `down` drops the function and the column.
 * @publicApi
 */
export class JobRunClaims1796600000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'JobRunClaims1796600000000';
  protected readonly upStatements = CREATE_JOB_CLAIMS;
  protected readonly downStatements = DROP_JOB_CLAIMS;
  protected override readonly mysqlUpStatements = CREATE_MYSQL_JOB_CLAIMS;
  protected override readonly mysqlDownStatements = DROP_MYSQL_JOB_CLAIMS;
}
