/**
 * The controls of scheduled jobs (both dialects): `locking_job_pause` (one row per paused job: who paused it, why,
 * since when), `locking_job_action` (every pause, resume and "run now": who, why, when), the run history's new
 * outcomes `'paused'` (a tick of a paused job) and `'requested'` (a "run now" no replica has claimed yet) with the
 * columns `manual`, `actor` and `reason`, and on PostgreSQL the functions `locking_claim_controlled_tick` (the claim of a
 * tick that records it `paused` while its job is paused) and `locking_claim_job_request` (the claim of a "run now").
 * Created by `JobControls1796800000000`.
 * @internal
 */

import { OWN_RUN_OF_STAMP } from './job-claims.schema.sql.js';

/** The outcomes a run row may record, before and after the migration. */
const OLD_OUTCOMES = `('running', 'succeeded', 'failed', 'lock-lost', 'skipped')`;
const OUTCOMES = `('running', 'succeeded', 'failed', 'lock-lost', 'skipped', 'paused', 'requested')`;

/** PostgreSQL, up. */
export const CREATE_JOB_CONTROLS: readonly string[] = [
  `ALTER TABLE locking_job_run DROP CONSTRAINT locking_job_run_outcome_check`,
  `ALTER TABLE locking_job_run ADD CONSTRAINT locking_job_run_outcome_check CHECK (outcome IN ${OUTCOMES})`,
  `ALTER TABLE locking_job_run ADD COLUMN manual boolean NOT NULL DEFAULT false`,
  `ALTER TABLE locking_job_run ADD COLUMN actor varchar(200)`,
  `ALTER TABLE locking_job_run ADD COLUMN reason varchar(500)`,
  // The replicas look for the "run now" requests of their jobs every second. On `manual` too, so that `down` drops
  // it with the column (an index name cannot be qualified with a schema in CREATE INDEX: see `lockMigrations`).
  `CREATE INDEX locking_job_run_requested_idx ON locking_job_run (job) WHERE manual AND outcome = 'requested'`,
  `CREATE TABLE locking_job_pause (
    job varchar(200) NOT NULL,
    actor varchar(200) NOT NULL,
    reason varchar(500) NOT NULL,
    paused_at timestamptz NOT NULL,
    CONSTRAINT locking_job_pause_pk PRIMARY KEY (job)
  )`,
  `CREATE TABLE locking_job_action (
    id bigserial NOT NULL,
    job varchar(200) NOT NULL,
    action varchar(16) NOT NULL,
    actor varchar(200) NOT NULL,
    reason varchar(500) NOT NULL,
    acted_at timestamptz NOT NULL,
    CONSTRAINT locking_job_action_pk PRIMARY KEY (id),
    CONSTRAINT locking_job_action_check CHECK (action IN ('pause', 'resume', 'run'))
  )`,
  `CREATE INDEX locking_job_action_job_idx ON locking_job_action (job, id)`,
  /*
   * The claim of a tick with the job's pause applied: arguments and answer as `locking_claim_job_tick`, plus `paused`.
   * Under the job's transaction advisory lock (the one the claims of the job take), a claim under a stamp of a paused
   * job records the tick `paused` (with the pause's actor and reason; a tick some replica claimed already is left as
   * it is) instead of claiming it; otherwise it is `locking_claim_job_tick`. A pause committed before the claim's
   * statement is seen by it (READ COMMITTED, a snapshot per statement).
   */
  `CREATE FUNCTION locking_claim_controlled_tick(p_job varchar, p_at float8, p_period float8, p_app_id varchar,
                                                p_stamp bigint, p_until float8)
   RETURNS TABLE (tick_ms float8, claimed boolean, busy boolean, paused boolean, now_ms float8)
   LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_actor varchar;
  v_reason varchar;
BEGIN
  IF p_stamp IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('locking_job:' || p_job, 0));
    SELECT p.actor, p.reason INTO v_actor, v_reason FROM locking_job_pause p WHERE p.job = p_job;
    IF FOUND AND NOT EXISTS (SELECT 1 FROM locking_job_run r
                              WHERE r.job = p_job AND r.outcome = 'running' AND r.stamp = p_stamp) THEN
      RETURN QUERY
      WITH t AS (
        SELECT COALESCE(to_timestamp(p_at / 1000),
                        to_timestamp(floor(extract(epoch FROM clock_timestamp()) * 1000 / p_period) * p_period / 1000)) AS tick
      ), c AS (
        INSERT INTO locking_job_run AS r (job, tick, outcome, actor, reason, claimable_until)
        SELECT p_job, t.tick, 'paused', v_actor, v_reason,
               CASE WHEN p_at IS NULL THEN t.tick + p_period * interval '1 millisecond'
                    ELSE GREATEST(t.tick, to_timestamp(p_until / 1000)) END
          FROM t
        ON CONFLICT (job, tick) DO UPDATE SET
          actor = CASE WHEN r.outcome = 'skipped' THEN excluded.actor ELSE r.actor END,
          reason = CASE WHEN r.outcome = 'skipped' THEN excluded.reason ELSE r.reason END,
          claimable_until = GREATEST(r.claimable_until, excluded.claimable_until),
          outcome = CASE WHEN r.outcome = 'skipped' THEN 'paused' ELSE r.outcome END
        RETURNING r.tick
      )
      SELECT (extract(epoch FROM c.tick) * 1000)::float8, false, false, true,
             (extract(epoch FROM clock_timestamp()) * 1000)::float8
        FROM c;
      RETURN;
    END IF;
  END IF;
  RETURN QUERY SELECT c.tick_ms, c.claimed, c.busy, false, c.now_ms
                 FROM locking_claim_job_tick(p_job, p_at, p_period, p_app_id, p_stamp, p_until) c;
END
$fn$`,
  /*
   * $1 job, $2 the request's tick (epoch ms), $3 app id, $4 stamp: the claim of a "run now" under the job's locks.
   * Under the job's transaction advisory lock: the request this stamp already claimed (a claim made again); else
   * busy while another run of the job still goes (its grant live: the request waits, never overlaps it); else the
   * request, if still `requested`, becomes this stamp's run.
   */
  `CREATE FUNCTION locking_claim_job_request(p_job varchar, p_tick float8, p_app_id varchar, p_stamp bigint)
   RETURNS TABLE (tick_ms float8, claimed boolean, busy boolean, now_ms float8)
   LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
${OWN_RUN_OF_STAMP}  IF EXISTS (SELECT 1 FROM locking_job_run r JOIN locking l ON l.stamp = r.stamp
              WHERE r.job = p_job AND r.outcome = 'running') THEN
    RETURN QUERY SELECT p_tick, false, true, (extract(epoch FROM clock_timestamp()) * 1000)::float8;
    RETURN;
  END IF;
  RETURN QUERY
  WITH c AS (
    UPDATE locking_job_run r SET outcome = 'running', app_id = p_app_id, stamp = p_stamp, started = clock_timestamp()
     WHERE r.job = p_job AND r.tick = to_timestamp(p_tick / 1000) AND r.outcome = 'requested'
    RETURNING 1
  )
  SELECT p_tick, EXISTS (SELECT 1 FROM c), false, (extract(epoch FROM clock_timestamp()) * 1000)::float8;
END
$fn$`,
];

/** PostgreSQL, down (the rows of the new outcomes go with them). */
export const DROP_JOB_CONTROLS: readonly string[] = [
  `DROP FUNCTION locking_claim_job_request(varchar, float8, varchar, bigint)`,
  `DROP FUNCTION locking_claim_controlled_tick(varchar, float8, float8, varchar, bigint, float8)`,
  `DROP TABLE locking_job_action`,
  `DROP TABLE locking_job_pause`,
  `DELETE FROM locking_job_run WHERE outcome IN ('paused', 'requested')`,
  `ALTER TABLE locking_job_run DROP COLUMN reason`,
  `ALTER TABLE locking_job_run DROP COLUMN actor`,
  `ALTER TABLE locking_job_run DROP COLUMN manual`, // and locking_job_run_requested_idx with it
  `ALTER TABLE locking_job_run DROP CONSTRAINT locking_job_run_outcome_check`,
  `ALTER TABLE locking_job_run ADD CONSTRAINT locking_job_run_outcome_check CHECK (outcome IN ${OLD_OUTCOMES})`,
];

/** MySQL and MariaDB, up (the claims are transactions of statements: see `mysql-job-controls.queries.sql.ts`). */
export const CREATE_MYSQL_JOB_CONTROLS: readonly string[] = [
  `ALTER TABLE locking_job_run DROP CONSTRAINT locking_job_run_outcome_check`,
  `ALTER TABLE locking_job_run ADD CONSTRAINT locking_job_run_outcome_check CHECK (outcome IN ${OUTCOMES})`,
  `ALTER TABLE locking_job_run ADD COLUMN manual tinyint(1) NOT NULL DEFAULT 0, ADD COLUMN actor varchar(200) NULL,
     ADD COLUMN reason varchar(500) NULL`,
  `CREATE TABLE locking_job_pause (
    job varchar(200) NOT NULL,
    actor varchar(200) NOT NULL,
    reason varchar(500) NOT NULL,
    paused_at datetime(6) NOT NULL,
    PRIMARY KEY (job)
  ) ENGINE=InnoDB`,
  `CREATE TABLE locking_job_action (
    id bigint NOT NULL AUTO_INCREMENT,
    job varchar(200) NOT NULL,
    action varchar(16) NOT NULL,
    actor varchar(200) NOT NULL,
    reason varchar(500) NOT NULL,
    acted_at datetime(6) NOT NULL,
    PRIMARY KEY (id),
    KEY locking_job_action_job_idx (job, id),
    CONSTRAINT locking_job_action_check CHECK (action IN ('pause', 'resume', 'run'))
  ) ENGINE=InnoDB`,
];

/** MySQL and MariaDB, down. */
export const DROP_MYSQL_JOB_CONTROLS: readonly string[] = [
  `DROP TABLE locking_job_action`,
  `DROP TABLE locking_job_pause`,
  `DELETE FROM locking_job_run WHERE outcome IN ('paused', 'requested')`,
  `ALTER TABLE locking_job_run DROP COLUMN reason, DROP COLUMN actor, DROP COLUMN manual`,
  `ALTER TABLE locking_job_run DROP CONSTRAINT locking_job_run_outcome_check`,
  `ALTER TABLE locking_job_run ADD CONSTRAINT locking_job_run_outcome_check CHECK (outcome IN ${OLD_OUTCOMES})`,
];
