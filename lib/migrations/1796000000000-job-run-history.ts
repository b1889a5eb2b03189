import {
  CREATE_JOB_RUN_TABLES,
  CREATE_MYSQL_JOB_RUN_TABLES,
  DROP_JOB_RUN_TABLES,
  DROP_MYSQL_JOB_RUN_TABLES,
} from './sql/job-runs.schema.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Scheduled jobs run once per tick across the fleet: `locking_job_run` (one row per job and tick, claimed by the
 * replica that runs it, with its outcome: the run history) and `locking_job` (each job's schedule, next tick and
 * last success). New tables only: safe while instances of the previous version run (they keep the per-replica
 * behaviour until they are upgraded). `down` drops them, and the history with them.
 * @publicApi
 */
export class JobRunHistory1796000000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'JobRunHistory1796000000000';
  protected readonly upStatements = CREATE_JOB_RUN_TABLES;
  protected readonly downStatements = DROP_JOB_RUN_TABLES;
  protected override readonly mysqlUpStatements = CREATE_MYSQL_JOB_RUN_TABLES;
  protected override readonly mysqlDownStatements = DROP_MYSQL_JOB_RUN_TABLES;
}
