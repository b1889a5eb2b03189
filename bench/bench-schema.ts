/** Tables of the raw contenders, next to the library's (created by its migration). @internal */

/** Rows churn in every contender's table alike: vacuum on a count of dead rows, as the library's `locking` does. */
const CHURN_AUTOVACUUM = `(autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_cost_delay = 0)`;

export const CREATE_BENCH_SCHEMA: readonly string[] = [
  // Durable floor: one row in, the same row out.
  `CREATE TABLE bench_floor (
     id      bigint       PRIMARY KEY,
     app_id  varchar(200) NOT NULL,
     created timestamptz  NOT NULL DEFAULT now()
   )`,
  `ALTER TABLE bench_floor SET ${CHURN_AUTOVACUUM}`,
  `CREATE FUNCTION bench_floor_delete_async(p_id bigint) RETURNS integer LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_count integer;
   BEGIN
     PERFORM set_config('synchronous_commit', 'off', true);
     DELETE FROM bench_floor WHERE id = p_id;
     GET DIAGNOSTICS v_count = ROW_COUNT;
     RETURN v_count;
   END
   $fn$`,
  // The bare rows of a grant (bare-rows.contender.ts): released like the library, without waiting for the flush.
  `CREATE FUNCTION bench_rows_release_async(p_stamp bigint, p_log boolean) RETURNS integer LANGUAGE plpgsql VOLATILE
   AS $fn$
   DECLARE
     v_count integer;
   BEGIN
     PERFORM set_config('synchronous_commit', 'off', true);
     IF p_log THEN
       UPDATE locking_log SET status = 'RELEASED', ended = now(), version = version + 1 WHERE stamp = p_stamp;
     END IF;
     DELETE FROM locking WHERE stamp = p_stamp;
     GET DIAGNOSTICS v_count = ROW_COUNT;
     RETURN v_count;
   END
   $fn$`,
  // The seed's algorithm, on a table shaped like `locking`.
  `CREATE SEQUENCE seed_locking_stamp_seq AS bigint MINVALUE 1 NO CYCLE`,
  `CREATE TABLE seed_locking (
     lock_name varchar(200) NOT NULL,
     mode      char(1)      NOT NULL,
     app_id    varchar(200) NOT NULL,
     stamp     bigint       NOT NULL,
     created   timestamptz  NOT NULL DEFAULT now(),
     CONSTRAINT seed_locking_pk PRIMARY KEY (lock_name, mode, stamp),
     CONSTRAINT seed_locking_mode_ck CHECK (mode IN ('R', 'W'))
   )`,
  `ALTER TABLE seed_locking SET ${CHURN_AUTOVACUUM}`,
  `CREATE INDEX seed_locking_stamp_idx ON seed_locking (stamp)`,
];

/** Run between measurements so that no contender inherits another's dead rows. */
export const VACUUM_ALL = 'VACUUM (ANALYZE) locking, locking_permissions, bench_floor, seed_locking';
