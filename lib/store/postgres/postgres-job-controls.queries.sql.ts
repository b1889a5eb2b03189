/**
 * The statements of the controls of scheduled jobs on PostgreSQL (`locking_job_pause`, `locking_job_action`, the
 * `requested` rows of `locking_job_run`), parameterised. Every time is the database's clock.
 * @internal
 */

/**
 * $1 job, $2 actor, $3 reason: pauses a registered job not paused yet and records the action, under the job's
 * transaction advisory lock (the one its claims take): a claim under way commits first, every later claim sees the
 * pause. Answers whether the job is registered, whether this call paused it, and the clock (epoch ms).
 */
export const PAUSE_JOB = `WITH j AS (
  SELECT job FROM locking_job WHERE job = $1
), l AS (
  SELECT pg_advisory_xact_lock(hashtextextended('locking_job:' || $1, 0)) FROM j
), p AS (
  INSERT INTO locking_job_pause (job, actor, reason, paused_at)
  SELECT j.job, $2, $3, clock_timestamp() FROM j, l
  ON CONFLICT (job) DO NOTHING
  RETURNING paused_at
), a AS (
  INSERT INTO locking_job_action (job, action, actor, reason, acted_at)
  SELECT $1, 'pause', $2, $3, p.paused_at FROM p
)
SELECT EXISTS (SELECT 1 FROM j) AS found, EXISTS (SELECT 1 FROM p) AS changed,
       (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms`;

/**
 * $1 job, $2 actor, $3 reason: resumes a paused job and records the action. Answers whether the job is registered (or
 * paused), whether this call resumed it, and the clock (epoch ms).
 */
export const RESUME_JOB = `WITH d AS (
  DELETE FROM locking_job_pause WHERE job = $1 RETURNING job
), a AS (
  INSERT INTO locking_job_action (job, action, actor, reason, acted_at)
  SELECT $1, 'resume', $2, $3, clock_timestamp() FROM d
)
SELECT EXISTS (SELECT 1 FROM d) OR EXISTS (SELECT 1 FROM locking_job WHERE job = $1) AS found,
       EXISTS (SELECT 1 FROM d) AS changed, (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms`;

/** $1 job: its schedule (no row: not registered) and the clock (epoch ms), from which a request's tick is chosen. */
export const SELECT_JOB_CLOCK = `SELECT schedule, (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms
  FROM locking_job WHERE job = $1`;

/**
 * $1 job, $2 tick (epoch ms), $3 actor, $4 reason: a "run now", `requested` at that tick, and its action; no row when
 * the tick is taken (then another tick is tried).
 */
export const REQUEST_RUN = `WITH r AS (
  INSERT INTO locking_job_run (job, tick, outcome, manual, actor, reason)
  VALUES ($1, to_timestamp($2::float8 / 1000), 'requested', true, $3, $4)
  ON CONFLICT (job, tick) DO NOTHING
  RETURNING job
), a AS (
  INSERT INTO locking_job_action (job, action, actor, reason, acted_at)
  SELECT $1, 'run', $3, $4, clock_timestamp() FROM r
)
SELECT 1 AS requested FROM r`;

/** $1 jobs (text[]): their requests not claimed yet, oldest first (`manual`: through `locking_job_run_requested_idx`). */
export const SELECT_REQUESTS = `SELECT job, (extract(epoch FROM tick) * 1000)::float8 AS tick_ms
  FROM locking_job_run WHERE manual AND outcome = 'requested' AND job = ANY($1::text[]) ORDER BY tick`;

/** $1 job, $2 tick (epoch ms), $3 app id, $4 stamp: the claim of a request (see `locking_claim_job_request`). */
export const CLAIM_REQUEST = `SELECT tick_ms, claimed, busy, now_ms FROM locking_claim_job_request($1, $2, $3, $4)`;

/** $1 job or null, $2 limit: the actions on jobs, newest first. */
export const SELECT_ACTIONS = `SELECT job, action, actor, reason, acted_at FROM locking_job_action
 WHERE ($1::text IS NULL OR job = $1) ORDER BY id DESC LIMIT $2`;
