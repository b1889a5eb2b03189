/**
 * The statements of the run history of scheduled jobs on PostgreSQL (`locking_job_run`, `locking_job`),
 * parameterised. Ticks travel as epoch milliseconds; every other time is the database's clock.
 * @internal
 */

/** A run whose grant is gone without an end recorded: its replica died, or lost its grant (reaped, recovered). */
const ABANDONED = `r.outcome = 'running' AND NOT EXISTS (SELECT 1 FROM locking l WHERE l.stamp = r.stamp)`;

/**
 * $1 job, $2 tick (epoch ms) or null, $3 period (ms) when $2 is null: the tick is then the start of the current
 * period on the database clock; $4 app id, $5 stamp, or null when the replica found the job's locks busy; $6 until
 * when the tick given in $2 can be claimed (epoch ms), or null. One round trip: `locking_claim_job_tick`
 * (migration `JobRunClaims1796600000000`) serialises the claims of the job, returns the run `$5` already claimed if
 * any, else claims: the first claim of a tick inserts its row `running`; a later claim counts itself in
 * `skipped_elsewhere`; a claim made while another tick of the job still runs (its grant live), or without a stamp,
 * counts in `skipped_busy` and leaves a row `skipped` that a later claim of the same tick may take.
 * `locking_claim_controlled_tick` (migration `JobControls1796800000000`) records the tick `paused` instead while the
 * job is paused.
 */
export const CLAIM_TICK = `SELECT tick_ms, claimed, busy, paused, now_ms FROM locking_claim_controlled_tick($1, $2, $3, $4, $5, $6)`;

/** $1 job, $2 tick (epoch ms), $3 stamp, $4 outcome, $5 error name, $6 duration (ms): the end of a claimed run. */
export const END_RUN = `UPDATE locking_job_run
  SET outcome = $4, error = $5, duration_ms = $6
  WHERE job = $1 AND tick = to_timestamp($2::float8 / 1000) AND stamp = $3`;

/** $1 job, $2 schedule, $3 next tick (epoch ms) or null, $4 whether a run has just succeeded. */
export const TOUCH_JOB = `INSERT INTO locking_job AS j (job, schedule, next_tick, last_succeeded, updated)
VALUES ($1, $2, to_timestamp($3::float8 / 1000), CASE WHEN $4::boolean THEN clock_timestamp() END, clock_timestamp())
ON CONFLICT (job) DO UPDATE SET
  schedule = excluded.schedule,
  next_tick = COALESCE(excluded.next_tick, j.next_tick),
  last_succeeded = COALESCE(excluded.last_succeeded, j.last_succeeded),
  updated = excluded.updated`;

/** $1 job or null, $2 since or null, $3 limit: runs, newest tick first. */
export const SELECT_RUNS = `SELECT r.job, (extract(epoch FROM r.tick) * 1000)::float8 AS tick_ms,
       CASE WHEN ${ABANDONED} THEN 'abandoned' ELSE r.outcome END AS outcome,
       r.app_id, r.stamp::text AS stamp, r.started, r.duration_ms, r.error, r.skipped_busy, r.skipped_elsewhere,
       r.manual, r.actor, r.reason
  FROM locking_job_run r
 WHERE ($1::text IS NULL OR r.job = $1) AND ($2::timestamptz IS NULL OR r.tick >= $2)
 ORDER BY r.tick DESC, r.job
 LIMIT $3`;

/** Every job, by name, with the age of its last success on the database clock and its pause. */
export const SELECT_JOBS = `SELECT j.job, j.schedule, j.next_tick, j.last_succeeded,
       extract(epoch FROM clock_timestamp() - j.last_succeeded)::float8 AS last_succeeded_age,
       p.actor AS paused_by, p.reason AS paused_reason, p.paused_at
  FROM locking_job j LEFT JOIN locking_job_pause p ON p.job = j.job
 ORDER BY j.job`;

/**
 * $1 retention (ms), $2 limit: deletes ended runs (and abandoned ones) whose tick is older than the retention and
 * that can no longer be claimed (a row deleted while its tick can still be claimed would let a replica that comes
 * later run the tick again). Rows of an older version have no `claimable_until`: their tick stands for it.
 */
export const PRUNE_RUNS = `DELETE FROM locking_job_run WHERE (job, tick) IN (
  SELECT r.job, r.tick FROM locking_job_run r
   WHERE r.tick < clock_timestamp() - $1 * interval '1 millisecond'
     AND COALESCE(r.claimable_until, r.tick) < clock_timestamp()
     AND (r.outcome <> 'running' OR NOT EXISTS (SELECT 1 FROM locking l WHERE l.stamp = r.stamp))
   LIMIT $2
   FOR UPDATE SKIP LOCKED)`;

/** $1 jobs (text[]): marks them as registered by a live replica (see `RETIRE_JOBS`). */
export const KEEP_JOBS = `UPDATE locking_job SET updated = clock_timestamp() WHERE job = ANY($1::text[])`;

/**
 * $1 idle time (ms): deletes the jobs no live replica has kept or run for that long (per-replica and `@Timeout` jobs
 * of replicas long gone: `Class.method@appId`). A paused job stays, with its pause, until it is resumed.
 */
export const RETIRE_JOBS = `DELETE FROM locking_job j WHERE j.updated < clock_timestamp() - $1 * interval '1 millisecond'
  AND NOT EXISTS (SELECT 1 FROM locking_job_pause p WHERE p.job = j.job)`;

/** The tick `$2` (epoch ms) or, when it is null, the current period of `$3` ms on the database clock. */
const TICK_OF_$2_$3 = `COALESCE(to_timestamp($2::float8 / 1000),
           to_timestamp(floor(extract(epoch FROM clock_timestamp()) * 1000 / $3::float8) * $3::float8 / 1000))`;

/**
 * $1 job, $2 tick (epoch ms) or null, $3 period (ms) when $2 is null, $4 until when the tick can be claimed (epoch ms,
 * with $2) or null: a tick of a paused job, recorded `paused` with the pause's actor and reason by a replica that found
 * the job's locks busy; only a tick nobody has recorded, or one recorded `skipped`, becomes `paused` (one some replica
 * claimed, or recorded `paused` already, is left as it is). No row: the job is not paused. The answer has the columns
 * of `CLAIM_TICK`.
 */
export const RECORD_PAUSED_TICK = `WITH p AS (
  SELECT actor, reason FROM locking_job_pause WHERE job = $1
), t AS (
  SELECT ${TICK_OF_$2_$3} AS tick
), c AS (
  INSERT INTO locking_job_run AS r (job, tick, outcome, actor, reason, claimable_until)
  SELECT $1, t.tick, 'paused', p.actor, p.reason,
         CASE WHEN $2::float8 IS NULL THEN t.tick + $3::float8 * interval '1 millisecond'
              ELSE GREATEST(t.tick, to_timestamp($4::float8 / 1000)) END
    FROM t, p
  ON CONFLICT (job, tick) DO UPDATE
    SET outcome = 'paused', actor = excluded.actor, reason = excluded.reason,
        claimable_until = GREATEST(r.claimable_until, excluded.claimable_until)
  WHERE r.outcome = 'skipped'
)
SELECT (extract(epoch FROM t.tick) * 1000)::float8 AS tick_ms, false AS claimed, false AS busy, true AS paused,
       (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms
  FROM t, p`;

/**
 * $1 job, $2 tick (epoch ms) or null, $3 period (ms) when $2 is null (the current period on the database clock, as
 * `CLAIM_TICK` names it): whether the tick is already claimed, counting this replica in its `skipped_elsewhere` when
 * it is, and the clock. A tick left `skipped` (busy) is open: a later claim may still take it.
 */
export const CHECK_TICK = `WITH t AS (
  SELECT ${TICK_OF_$2_$3} AS tick
), u AS (
  UPDATE locking_job_run r SET skipped_elsewhere = r.skipped_elsewhere + 1
    FROM t WHERE r.job = $1 AND r.tick = t.tick AND r.outcome <> 'skipped'
  RETURNING 1
)
SELECT (extract(epoch FROM t.tick) * 1000)::float8 AS tick_ms, EXISTS (SELECT 1 FROM u) AS taken,
       (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms
  FROM t`;

/**
 * $1 job, $2 tick (epoch ms), $3 stamp, $4 outcome, $5 error name, $6 duration (ms), $7 schedule, $8 ms since the run
 * ended: an end written late (`END_RUN`, and the job's success dated at the run's end, never moving it back).
 */
export const END_RUN_LATE = `WITH e AS (
  UPDATE locking_job_run SET outcome = $4, error = $5, duration_ms = $6
   WHERE job = $1 AND tick = to_timestamp($2::float8 / 1000) AND stamp = $3
)
INSERT INTO locking_job AS j (job, schedule, next_tick, last_succeeded, updated)
VALUES ($1, $7, NULL, CASE WHEN $4::text = 'succeeded' THEN clock_timestamp() - $8::float8 * interval '1 millisecond' END,
        clock_timestamp())
ON CONFLICT (job) DO UPDATE SET
  schedule = excluded.schedule,
  last_succeeded = GREATEST(excluded.last_succeeded, j.last_succeeded),
  updated = excluded.updated`;
