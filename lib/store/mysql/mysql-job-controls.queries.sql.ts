/**
 * The statements of the controls of scheduled jobs on MySQL and MariaDB (`locking_job_pause`, `locking_job_action`,
 * the `requested` rows of `locking_job_run`), parameterised (`?`). Ticks are UTC `DATETIME(3)` values, passed as text;
 * every other time is the database's clock.
 * @internal
 */

/** Milliseconds since the epoch of a UTC `DATETIME` expression. */
const MS_OF = (expression: string): string => `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${expression}) / 1000`;

/** ? job: the job's schedule and the clock (epoch ms), read after `TAKE_JOB` wrote (and so locked) its row. */
export const SELECT_JOB_CLOCK = `SELECT schedule, ${MS_OF('UTC_TIMESTAMP(6)')} AS now_ms FROM locking_job WHERE job = ?`;

/** ? job: whether the job is paused (read after `TAKE_JOB`: pauses and resumes of the job are serialised by its row). */
export const SELECT_PAUSED = `SELECT job FROM locking_job_pause WHERE job = ?`;

/** ? job, ? actor, ? reason: pauses the job. */
export const INSERT_PAUSE = `INSERT INTO locking_job_pause (job, actor, reason, paused_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))`;

/** ? job: resumes the job. */
export const DELETE_PAUSE = `DELETE FROM locking_job_pause WHERE job = ?`;

/** ? job, ? action, ? actor, ? reason: records an action on the job. */
export const INSERT_ACTION = `INSERT INTO locking_job_action (job, action, actor, reason, acted_at) VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))`;

/** ? job, ? tick, ? actor, ? reason: a "run now", `requested` at that tick; no row written when the tick is taken. */
export const INSERT_REQUEST = `INSERT IGNORE INTO locking_job_run (job, tick, outcome, manual, actor, reason)
VALUES (?, ?, 'requested', 1, ?, ?)`;

/** ? jobs (an array: the driver writes the list): their requests not claimed yet, oldest first. */
export const SELECT_REQUESTS = `SELECT job, ${MS_OF('tick')} AS tick_ms FROM locking_job_run
 WHERE outcome = 'requested' AND job IN (?) ORDER BY tick`;

/**
 * ? job: the pause of the job and the clock (epoch ms), read in a claim (after the job's row is locked; without it by a
 * replica that found the job's locks busy).
 */
export const SELECT_PAUSE = `SELECT actor, reason, ${MS_OF('UTC_TIMESTAMP(6)')} AS now_ms FROM locking_job_pause WHERE job = ?`;

/**
 * ? job, ? tick, ? actor, ? reason, ? until when the tick can be claimed: records a tick of a paused job `paused`; a
 * tick some replica claimed already is left as it is (`outcome` last, as in `UPSERT_TICK`).
 */
export const UPSERT_PAUSED_TICK = `INSERT INTO locking_job_run (job, tick, outcome, actor, reason, claimable_until)
VALUES (?, ?, 'paused', ?, ?, ?)
ON DUPLICATE KEY UPDATE
  claimable_until = GREATEST(COALESCE(claimable_until, VALUES(claimable_until)), VALUES(claimable_until)),
  actor = IF(outcome = 'skipped', VALUES(actor), actor),
  reason = IF(outcome = 'skipped', VALUES(reason), reason),
  outcome = IF(outcome = 'skipped', 'paused', outcome)`;

/** ? job: whether a run of the job still goes (its grant live), and the clock. */
export const SELECT_RUNNING = `SELECT EXISTS (SELECT 1 FROM locking_job_run r JOIN locking l ON l.stamp = r.stamp
                WHERE r.job = ? AND r.outcome = 'running') AS busy, ${MS_OF('UTC_TIMESTAMP(6)')} AS now_ms`;

/** ? app id, ? stamp, ? job, ? tick: the request, if still `requested`, becomes this stamp's run. */
export const CLAIM_REQUEST = `UPDATE locking_job_run SET outcome = 'running', app_id = ?, stamp = ?, started = UTC_TIMESTAMP(6)
 WHERE job = ? AND tick = ? AND outcome = 'requested'`;

/** ? job, ? stamp: the tick (epoch ms) the stamp already claimed (a claim made again), if any. */
export const SELECT_OWN = `SELECT ${MS_OF('tick')} AS own_ms FROM locking_job_run WHERE job = ? AND outcome = 'running' AND stamp = ? LIMIT 1`;

/** ? job or null (twice), ? limit: the actions on jobs, newest first. */
export const SELECT_ACTIONS = `SELECT job, action, actor, reason, DATE_FORMAT(acted_at, '%Y-%m-%dT%H:%i:%s.%fZ') AS acted_at
  FROM locking_job_action WHERE (? IS NULL OR job = ?) ORDER BY id DESC LIMIT ?`;
