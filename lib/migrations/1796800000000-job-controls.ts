import {
  CREATE_JOB_CONTROLS,
  CREATE_MYSQL_JOB_CONTROLS,
  DROP_JOB_CONTROLS,
  DROP_MYSQL_JOB_CONTROLS,
} from './sql/job-controls.schema.sql.js';
import { LockSqlMigration } from './lock-sql.migration.js';

/**
 * Controls of scheduled jobs across the fleet: pause / resume (`locking_job_pause`, read by every claim: a paused
 * job's ticks are recorded `paused`), "run now" (a `requested` row of `locking_job_run`, claimed once under the job's
 * locks), and every action's actor and reason (`locking_job_action`; the runs' `manual`, `actor`, `reason`).
 * Instances of the previous version ignore pauses and requests: run the migration, then upgrade every replica before
 * using the controls. `down` drops the tables, the functions, the columns and the rows of the new outcomes.
 * @publicApi
 */
export class JobControls1796800000000 extends LockSqlMigration {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'JobControls1796800000000';
  protected readonly upStatements = CREATE_JOB_CONTROLS;
  protected readonly downStatements = DROP_JOB_CONTROLS;
  protected override readonly mysqlUpStatements = CREATE_MYSQL_JOB_CONTROLS;
  protected override readonly mysqlDownStatements = DROP_MYSQL_JOB_CONTROLS;
}
