/**
 * The statements of the run history of scheduled jobs on MySQL and MariaDB (`locking_job_run`, `locking_job`),
 * parameterised (`?`). Ticks are UTC `DATETIME(3)` values, passed as text; every other time is the database's clock.
 * @internal
 */

/** Milliseconds since the epoch of a UTC `DATETIME` expression. */
const MS_OF = (expression: string): string => `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${expression}) / 1000`;

/** ? period (ms) twice: the start of the current period on the database clock (epoch ms), and the clock. */
export const SELECT_SLOT = `SELECT FLOOR(${MS_OF('UTC_TIMESTAMP(6)')} / ?) * ? AS slot_ms,
  ${MS_OF('UTC_TIMESTAMP(6)')} AS now_ms`;

/** A new value of `locking_job.updated` that always differs from the old one: the database clock, or 1 µs past it. */
const TOUCHED = 'GREATEST(UTC_TIMESTAMP(6), updated + INTERVAL 1 MICROSECOND)';

/**
 * ? job: writes the job's row (its `updated` time), which locks it until the claim or the control commits, so that the
 * claims and controls of one job are serialised (the statements after it, at READ COMMITTED, see every claim and pause
 * committed before). A write rather than a locking read: on a Galera cluster row locks hold on one node only, and
 * only what a transaction writes is certified, so two claims (or a claim and a pause) on two nodes conflict there and
 * the one certified second is run again. No row changed: the job has no row.
 */
export const TAKE_JOB = `UPDATE locking_job SET updated = ${TOUCHED} WHERE job = ?`;

/**
 * ? job: makes and locks the job's row when `TAKE_JOB` found none (the job's registration failed), with an empty
 * schedule that the end of the run fills in; written like `TAKE_JOB` when another transaction made it meanwhile.
 */
export const ADD_JOB = `INSERT INTO locking_job (job, schedule, updated) VALUES (?, '', UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE updated = ${TOUCHED}`;

/**
 * ? job, ? stamp, ? job, ? tick: the tick the stamp already claimed (epoch ms, or null: a claim whose answer was lost
 * is made again under the same stamp), whether another tick of the job is still running (its grant live), and the clock.
 */
export const SELECT_OWN_AND_BUSY = `SELECT
  (SELECT ${MS_OF('o.tick')} FROM locking_job_run o WHERE o.job = ? AND o.outcome = 'running' AND o.stamp = ? LIMIT 1) AS own_ms,
  EXISTS (SELECT 1 FROM locking_job_run r JOIN locking l ON l.stamp = r.stamp
           WHERE r.job = ? AND r.outcome = 'running' AND r.tick <> ?) AS busy,
  ${MS_OF('UTC_TIMESTAMP(6)')} AS now_ms`;

/**
 * ? job, ? tick, ? outcome ('running' or 'skipped'), ? app id, ? stamp, ? stamp, ? skipped_busy (0 or 1), ? until when
 * the tick can be claimed: the claim of `locking_claim_job_tick` on PostgreSQL. MySQL applies the assignments in
 * order, each seeing the ones before: `outcome` comes last, so that the others read the row's previous outcome.
 */
export const UPSERT_TICK = `INSERT INTO locking_job_run (job, tick, outcome, app_id, stamp, started, skipped_busy, claimable_until)
VALUES (?, ?, ?, ?, ?, IF(? IS NULL, NULL, UTC_TIMESTAMP(6)), ?, ?)
ON DUPLICATE KEY UPDATE
  claimable_until = GREATEST(COALESCE(claimable_until, VALUES(claimable_until)), VALUES(claimable_until)),
  app_id = IF(outcome = 'skipped', VALUES(app_id), app_id),
  stamp = IF(outcome = 'skipped', VALUES(stamp), stamp),
  started = IF(outcome = 'skipped', VALUES(started), started),
  skipped_busy = skipped_busy + VALUES(skipped_busy),
  skipped_elsewhere = skipped_elsewhere + IF(outcome <> 'skipped' AND VALUES(outcome) = 'running', 1, 0),
  outcome = IF(outcome = 'skipped', VALUES(outcome), outcome)`;

/** ? job, ? tick: who holds the tick now, and the clock. */
export const SELECT_TICK = `SELECT outcome, stamp, ${MS_OF('UTC_TIMESTAMP(6)')} AS now_ms
  FROM locking_job_run WHERE job = ? AND tick = ?`;

/** ? outcome, ? error, ? duration, ? job, ? tick, ? stamp: the end of a claimed run. */
export const END_RUN = `UPDATE locking_job_run SET outcome = ?, error = ?, duration_ms = ?
  WHERE job = ? AND tick = ? AND stamp = ?`;

/** ? job, ? schedule, ? next tick or null, ? whether a run has just succeeded. */
export const TOUCH_JOB = `INSERT INTO locking_job (job, schedule, next_tick, last_succeeded, updated)
VALUES (?, ?, ?, IF(?, UTC_TIMESTAMP(6), NULL), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE
  schedule = VALUES(schedule),
  next_tick = COALESCE(VALUES(next_tick), next_tick),
  last_succeeded = COALESCE(VALUES(last_succeeded), last_succeeded),
  updated = VALUES(updated)`;

/** A UTC `DATETIME` column as ISO 8601 text. */
const iso = (column: string): string => `DATE_FORMAT(${column}, '%Y-%m-%dT%H:%i:%s.%fZ')`;

/** ? job or null (twice), ? since or null (twice), ? limit: runs, newest tick first. */
export const SELECT_RUNS = `SELECT r.job, ${MS_OF('r.tick')} AS tick_ms,
       CASE WHEN r.outcome = 'running' AND NOT EXISTS (SELECT 1 FROM locking l WHERE l.stamp = r.stamp)
            THEN 'abandoned' ELSE r.outcome END AS outcome,
       r.app_id, CAST(r.stamp AS CHAR) AS stamp, ${iso('r.started')} AS started, r.duration_ms, r.error,
       r.skipped_busy, r.skipped_elsewhere, r.manual, r.actor, r.reason
  FROM locking_job_run r
 WHERE (? IS NULL OR r.job = ?) AND (? IS NULL OR r.tick >= ?)
 ORDER BY r.tick DESC, r.job
 LIMIT ?`;

/** Every job, by name, with the age of its last success on the database clock and its pause. */
export const SELECT_JOBS = `SELECT j.job, j.schedule, ${iso('j.next_tick')} AS next_tick,
       ${iso('j.last_succeeded')} AS last_succeeded,
       TIMESTAMPDIFF(MICROSECOND, j.last_succeeded, UTC_TIMESTAMP(6)) / 1000000 AS last_succeeded_age,
       p.actor AS paused_by, p.reason AS paused_reason, ${iso('p.paused_at')} AS paused_at
  FROM locking_job j LEFT JOIN locking_job_pause p ON p.job = j.job
 ORDER BY j.job`;

/**
 * ? retention (ms), ? limit: deletes ended runs (and abandoned ones) whose tick is older than the retention and that
 * can no longer be claimed (a row deleted while its tick can still be claimed would let a replica that comes later run
 * the tick again). Rows of an older version have no `claimable_until`: their tick stands for it.
 */
export const PRUNE_RUNS = `DELETE FROM locking_job_run
 WHERE tick < UTC_TIMESTAMP(3) - INTERVAL (? * 1000) MICROSECOND
   AND COALESCE(claimable_until, tick) < UTC_TIMESTAMP(3)
   AND (outcome <> 'running' OR NOT EXISTS (SELECT 1 FROM locking l WHERE l.stamp = locking_job_run.stamp))
 ORDER BY tick LIMIT ?`;

/** ? jobs (an array: the driver writes the list): marks them as registered by a live replica (see `RETIRE_JOBS`). */
export const KEEP_JOBS = `UPDATE locking_job SET updated = UTC_TIMESTAMP(6) WHERE job IN (?)`;

/**
 * ? idle time (ms): deletes the jobs no live replica has kept or run for that long (per-replica and `@Timeout` jobs of
 * replicas long gone: `Class.method@appId`). A paused job stays, with its pause, until it is resumed.
 */
export const RETIRE_JOBS = `DELETE FROM locking_job WHERE updated < UTC_TIMESTAMP(6) - INTERVAL (? * 1000) MICROSECOND
  AND NOT EXISTS (SELECT 1 FROM locking_job_pause p WHERE p.job = locking_job.job)`;

/**
 * ? job, ? tick (epoch ms) or null, ? period (ms) twice: the tick (given, or the current period on the database
 * clock), whether a replica has claimed it already (a `skipped` row is open), and the clock.
 */
export const CHECK_TICK = `SELECT x.tick_ms, x.now_ms, EXISTS (
  SELECT 1 FROM locking_job_run r
   WHERE r.job = ? AND r.tick = TIMESTAMP('1970-01-01 00:00:00') + INTERVAL (x.tick_ms * 1000) MICROSECOND
     AND r.outcome <> 'skipped') AS taken
  FROM (SELECT COALESCE(?, FLOOR(${MS_OF('UTC_TIMESTAMP(6)')} / ?) * ?) AS tick_ms, ${MS_OF('UTC_TIMESTAMP(6)')} AS now_ms) x`;

/** ? job, ? tick: counts a replica that found the tick claimed already. */
export const COUNT_ELSEWHERE = `UPDATE locking_job_run SET skipped_elsewhere = skipped_elsewhere + 1
  WHERE job = ? AND tick = ? AND outcome <> 'skipped'`;

/**
 * ? job, ? schedule, ? whether the run succeeded, ? ms since it ended: the job's success of an end written late, dated
 * at the run's end and never moving the last success back; the next tick is left as it is.
 */
export const TOUCH_JOB_LATE = `INSERT INTO locking_job (job, schedule, next_tick, last_succeeded, updated)
VALUES (?, ?, NULL, IF(?, UTC_TIMESTAMP(6) - INTERVAL (? * 1000) MICROSECOND, NULL), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE
  schedule = VALUES(schedule),
  last_succeeded = COALESCE(GREATEST(VALUES(last_succeeded), last_succeeded), VALUES(last_succeeded), last_succeeded),
  updated = VALUES(updated)`;
