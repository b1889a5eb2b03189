/**
 * The tables of the run history of scheduled jobs, on each dialect: `locking_job_run` (one row per job and tick:
 * its primary key is what makes a tick run once across the fleet) and `locking_job` (one row per job: its schedule,
 * next tick and last success). Created by `JobRunHistory1796000000000`.
 * @internal
 */

/** The outcomes a run row may record. */
const OUTCOMES = `('running', 'succeeded', 'failed', 'lock-lost', 'skipped')`;

/** PostgreSQL, up. */
export const CREATE_JOB_RUN_TABLES: readonly string[] = [
  `CREATE TABLE locking_job_run (
    job varchar(200) NOT NULL,
    tick timestamptz NOT NULL,
    outcome varchar(16) NOT NULL,
    app_id varchar(200),
    stamp bigint,
    started timestamptz,
    duration_ms integer,
    error varchar(200),
    skipped_busy integer NOT NULL DEFAULT 0,
    skipped_elsewhere integer NOT NULL DEFAULT 0,
    CONSTRAINT locking_job_run_pk PRIMARY KEY (job, tick),
    CONSTRAINT locking_job_run_outcome_check CHECK (outcome IN ${OUTCOMES})
  )`,
  // The claim looks for a run of the job still going; the pruning walks the oldest ticks.
  `CREATE INDEX locking_job_run_running_idx ON locking_job_run (job) WHERE outcome = 'running'`,
  `CREATE INDEX locking_job_run_tick_idx ON locking_job_run (tick)`,
  `CREATE TABLE locking_job (
    job varchar(200) NOT NULL,
    schedule varchar(200) NOT NULL,
    next_tick timestamptz,
    last_succeeded timestamptz,
    updated timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT locking_job_pk PRIMARY KEY (job)
  )`,
];

/** PostgreSQL, down. */
export const DROP_JOB_RUN_TABLES: readonly string[] = [`DROP TABLE locking_job`, `DROP TABLE locking_job_run`];

/** MySQL and MariaDB, up. Ticks are UTC `DATETIME(3)`, other times UTC `DATETIME(6)`. */
export const CREATE_MYSQL_JOB_RUN_TABLES: readonly string[] = [
  `CREATE TABLE locking_job_run (
    job varchar(200) NOT NULL,
    tick datetime(3) NOT NULL,
    outcome varchar(16) NOT NULL,
    app_id varchar(200) NULL,
    stamp bigint NULL,
    started datetime(6) NULL,
    duration_ms int NULL,
    error varchar(200) NULL,
    skipped_busy int NOT NULL DEFAULT 0,
    skipped_elsewhere int NOT NULL DEFAULT 0,
    PRIMARY KEY (job, tick),
    KEY locking_job_run_running_idx (job, outcome),
    KEY locking_job_run_tick_idx (tick),
    CONSTRAINT locking_job_run_outcome_check CHECK (outcome IN ${OUTCOMES})
  ) ENGINE=InnoDB`,
  `CREATE TABLE locking_job (
    job varchar(200) NOT NULL,
    schedule varchar(200) NOT NULL,
    next_tick datetime(3) NULL,
    last_succeeded datetime(6) NULL,
    updated datetime(6) NOT NULL,
    PRIMARY KEY (job)
  ) ENGINE=InnoDB`,
];

/** MySQL and MariaDB, down. */
export const DROP_MYSQL_JOB_RUN_TABLES: readonly string[] = [`DROP TABLE locking_job`, `DROP TABLE locking_job_run`];
