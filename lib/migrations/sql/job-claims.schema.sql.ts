/**
 * The second version of the run history's claim (both dialects): `locking_job_run.claimable_until` (until when a
 * tick's row can still be claimed again, so that pruning keeps it until then) and, on PostgreSQL, the function
 * `locking_claim_job_tick` (one round trip: serialises the claims of one job, recognises a claim already made under
 * the same stamp, then claims). Created by `JobRunClaims1796600000000`.
 * @internal
 */

/**
 * PL/pgSQL of a claim under `p_stamp` (its columns: tick_ms, claimed, busy, now_ms): takes the job's transaction
 * advisory lock (the claims of one job are serialised), then returns the run this stamp already claimed, if any (a
 * claim made again after its answer was lost). Shared by `locking_claim_job_tick` and `locking_claim_job_request`.
 */
export const OWN_RUN_OF_STAMP = `    PERFORM pg_advisory_xact_lock(hashtextextended('locking_job:' || p_job, 0));
    RETURN QUERY SELECT (extract(epoch FROM r.tick) * 1000)::float8, true, false,
                        (extract(epoch FROM clock_timestamp()) * 1000)::float8
                   FROM locking_job_run r
                  WHERE r.job = p_job AND r.outcome = 'running' AND r.stamp = p_stamp
                  LIMIT 1;
    IF FOUND THEN
      RETURN;
    END IF;
`;

/** PostgreSQL, up. */
export const CREATE_JOB_CLAIMS: readonly string[] = [
  `ALTER TABLE locking_job_run ADD COLUMN claimable_until timestamptz`,
  /*
   * $1 job, $2 tick (epoch ms) or null, $3 period (ms) when $2 is null (the tick is then the start of the current
   * period on the database clock), $4 app id, $5 stamp (null: the replica found the job's locks busy, and only counts
   * itself), $6 until when the tick can be claimed (epoch ms) when $2 is given (null: only at the tick itself); a
   * period's tick can be claimed until the period ends.
   * VOLATILE plpgsql at READ COMMITTED: each statement takes a snapshot of its own, so once the transaction advisory
   * lock of the job is ours, the claim sees every claim of the job committed before it (a second run of a job with
   * shared locks is refused). A claim whose answer was lost and that is made again under the same stamp finds its own
   * running row and returns it: claiming is idempotent per grant.
   */
  `CREATE FUNCTION locking_claim_job_tick(p_job varchar, p_at float8, p_period float8, p_app_id varchar,
                                         p_stamp bigint, p_until float8)
   RETURNS TABLE (tick_ms float8, claimed boolean, busy boolean, now_ms float8)
   LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF p_stamp IS NOT NULL THEN
${OWN_RUN_OF_STAMP}  END IF;
  RETURN QUERY
  WITH t AS (
    SELECT COALESCE(to_timestamp(p_at / 1000),
                    to_timestamp(floor(extract(epoch FROM clock_timestamp()) * 1000 / p_period) * p_period / 1000)) AS tick
  ), b AS (
    SELECT p_stamp IS NULL OR EXISTS (
      SELECT 1 FROM locking_job_run r JOIN locking l ON l.stamp = r.stamp
       WHERE r.job = p_job AND r.outcome = 'running' AND r.tick <> t.tick) AS busy
      FROM t
  ), c AS (
    INSERT INTO locking_job_run AS r (job, tick, outcome, app_id, stamp, started, skipped_busy, claimable_until)
    SELECT p_job, t.tick, CASE WHEN b.busy THEN 'skipped' ELSE 'running' END,
           CASE WHEN b.busy THEN NULL ELSE p_app_id END, CASE WHEN b.busy THEN NULL ELSE p_stamp END,
           CASE WHEN b.busy THEN NULL ELSE clock_timestamp() END, CASE WHEN b.busy THEN 1 ELSE 0 END,
           CASE WHEN p_at IS NULL THEN t.tick + p_period * interval '1 millisecond'
                ELSE GREATEST(t.tick, to_timestamp(p_until / 1000)) END
      FROM t, b
    ON CONFLICT (job, tick) DO UPDATE SET
      app_id = CASE WHEN r.outcome = 'skipped' THEN excluded.app_id ELSE r.app_id END,
      stamp = CASE WHEN r.outcome = 'skipped' THEN excluded.stamp ELSE r.stamp END,
      started = CASE WHEN r.outcome = 'skipped' THEN excluded.started ELSE r.started END,
      skipped_busy = r.skipped_busy + excluded.skipped_busy,
      skipped_elsewhere = r.skipped_elsewhere
        + CASE WHEN r.outcome <> 'skipped' AND excluded.outcome = 'running' THEN 1 ELSE 0 END,
      claimable_until = GREATEST(r.claimable_until, excluded.claimable_until),
      outcome = CASE WHEN r.outcome = 'skipped' THEN excluded.outcome ELSE r.outcome END
    RETURNING r.tick, r.outcome, r.stamp
  )
  SELECT (extract(epoch FROM c.tick) * 1000)::float8, c.outcome = 'running' AND c.stamp IS NOT DISTINCT FROM p_stamp,
         b.busy, (extract(epoch FROM clock_timestamp()) * 1000)::float8
    FROM c, b;
END
$fn$`,
];

/** PostgreSQL, down. */
export const DROP_JOB_CLAIMS: readonly string[] = [
  `DROP FUNCTION locking_claim_job_tick(varchar, float8, float8, varchar, bigint, float8)`,
  `ALTER TABLE locking_job_run DROP COLUMN claimable_until`,
];

/** MySQL and MariaDB, up (a claim there is a transaction of statements: see `mysql-job-runs.queries.sql.ts`). */
export const CREATE_MYSQL_JOB_CLAIMS: readonly string[] = [
  `ALTER TABLE locking_job_run ADD COLUMN claimable_until datetime(3) NULL`,
];

/** MySQL and MariaDB, down. */
export const DROP_MYSQL_JOB_CLAIMS: readonly string[] = [`ALTER TABLE locking_job_run DROP COLUMN claimable_until`];
