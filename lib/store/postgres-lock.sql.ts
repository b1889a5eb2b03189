/**
 * Every SQL statement of nestjs-db-locks for PostgreSQL, in one place: the schema (used by the migration) and the
 * statements of the engine. All statements are parameterised.
 * @internal
 */

/** Namespace (first key) of the transaction advisory locks taken by `locking_try_acquire`. */
export const ADVISORY_NAMESPACE = 1_819_239_275; // 'lock' in ASCII

/** Creates the sequence, tables and functions of the lock engine. */
export const CREATE_LOCK_SCHEMA: readonly string[] = [
  `CREATE SEQUENCE locking_stamp_seq AS bigint MINVALUE 1 MAXVALUE 9007199254740991 NO CYCLE`,
  `CREATE TABLE locking (
     lock_name varchar(200) NOT NULL,
     mode      char(1)      NOT NULL,
     app_id    varchar(200) NOT NULL,
     stamp     bigint       NOT NULL,
     created   timestamptz  NOT NULL DEFAULT now(),
     CONSTRAINT locking_pk PRIMARY KEY (lock_name, mode, stamp),
     CONSTRAINT locking_mode_ck CHECK (mode IN ('R', 'W'))
   )`,
  // Rows churn (one insert and one delete per grant): vacuum on a count of dead rows, never on a share of a tiny table.
  `ALTER TABLE locking SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
     autovacuum_vacuum_cost_delay = 0)`,
  `CREATE INDEX locking_stamp_idx ON locking (stamp)`,
  `CREATE TABLE locking_permissions (
     lock_name varchar(200) NOT NULL,
     mode      char(1)      NOT NULL,
     permits   integer      NOT NULL,
     CONSTRAINT locking_permissions_pk PRIMARY KEY (lock_name, mode),
     CONSTRAINT locking_permissions_mode_ck CHECK (mode IN ('R', 'W')),
     CONSTRAINT locking_permissions_permits_ck CHECK (permits >= 1)
   )`,
  // One call acquires a batch of groups (the concurrent tryLocks of one process; usually just one): one round trip,
  // one commit. The batch's names are serialised with transaction advisory locks taken in sorted key order (no
  // deadlock, no serialization failure). Each statement of a VOLATILE function takes a fresh READ COMMITTED snapshot,
  // so the checks see every grant committed by the previous holder of an advisory lock (released only once its commit
  // is visible), and each group also sees the rows inserted for the groups before it in the batch. Permits are read
  // in the check, from committed rows, never from a client cache. Measured choices (README, "Design and
  // performance"): queueing on a busy name beats answering 0 early, and the check is inline because PL/pgSQL caches
  // its plan where a separate SQL function would be planned on every call.
  `CREATE FUNCTION locking_try_acquire(p_app_id text, p_names text[], p_modes text[], p_group_ends integer[],
                                      p_default_read integer, p_default_write integer)
   RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_key    integer;
     v_from   integer := 1;
     v_to     integer;
     v_stamp  bigint;
     v_stamps bigint[] := '{}';
   BEGIN
     IF current_setting('transaction_isolation') <> 'read committed' THEN
       RAISE EXCEPTION 'locking_try_acquire needs READ COMMITTED, the session uses %',
         current_setting('transaction_isolation') USING ERRCODE = 'LK001';
     END IF;
     IF cardinality(p_names) = 1 THEN
       -- The most common call, one lock: no sort needed (a simple expression, no query).
       PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, hashtext(p_names[1]));
     ELSE
       FOR v_key IN SELECT DISTINCT hashtext(n) AS k FROM unnest(p_names) AS n ORDER BY k LOOP
         PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, v_key);
       END LOOP;
     END IF;
     -- Group i is p_names[previous end + 1 .. p_group_ends[i]], in arrival order.
     FOREACH v_to IN ARRAY p_group_ends LOOP
       IF EXISTS (
         SELECT 1
         FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]::char(1)[]) AS r(name, mode)
         LEFT JOIN locking_permissions p ON p.lock_name = r.name AND p.mode = r.mode
         CROSS JOIN LATERAL (SELECT coalesce(p.permits,
                               CASE r.mode WHEN 'W' THEN p_default_write ELSE p_default_read END) AS permits) AS lim
         WHERE EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = r.name AND l.mode <> r.mode)
            OR (SELECT count(*) FROM (SELECT 1 FROM locking l WHERE l.lock_name = r.name AND l.mode = r.mode
                                      LIMIT lim.permits) AS held) >= lim.permits
       ) THEN
         v_stamps := v_stamps || 0::bigint;
       ELSE
         v_stamp := nextval('locking_stamp_seq');
         INSERT INTO locking (lock_name, mode, app_id, stamp)
           SELECT r.name, r.mode, p_app_id, v_stamp FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode);
         v_stamps := v_stamps || v_stamp;
       END IF;
       v_from := v_to + 1;
     END LOOP;
     RETURN v_stamps;
   END
   $fn$`,
  // Releases a batch of stamps; returns those that matched a row of the app. The commit may skip waiting for the WAL
  // flush: freeing a lock early can never break exclusion, and the next durable grant flushes it anyway.
  // One indexed delete per stamp: measured faster than a single `stamp = ANY($2)` delete for the usual one stamp.
  `CREATE FUNCTION locking_release(p_app_id text, p_stamps bigint[], p_async boolean)
   RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_stamp    bigint;
     v_deleted  integer;
     v_released bigint[] := '{}';
   BEGIN
     IF p_async THEN
       PERFORM set_config('synchronous_commit', 'off', true);
     END IF;
     FOREACH v_stamp IN ARRAY p_stamps LOOP
       DELETE FROM locking WHERE app_id = p_app_id AND stamp = v_stamp;
       GET DIAGNOSTICS v_deleted = ROW_COUNT;
       IF v_deleted > 0 THEN
         v_released := v_released || v_stamp;
       END IF;
     END LOOP;
     RETURN v_released;
   END
   $fn$`,
];

/** Drops everything `CREATE_LOCK_SCHEMA` created. */
export const DROP_LOCK_SCHEMA: readonly string[] = [
  `DROP FUNCTION IF EXISTS locking_release(text, bigint[], boolean)`,
  `DROP FUNCTION IF EXISTS locking_try_acquire(text, text[], text[], integer[], integer, integer)`,
  `DROP TABLE IF EXISTS locking_permissions`,
  `DROP TABLE IF EXISTS locking`,
  `DROP SEQUENCE IF EXISTS locking_stamp_seq`,
];

/** $1 app id, $2 names, $3 modes ('R'/'W') of all groups in a row, $4 the (1-based, inclusive) end of each group in
 * them, $5 default read permits, $6 default write permits → one stamp (or 0) per group. */
export const TRY_ACQUIRE_GROUPS = `SELECT locking_try_acquire($1, $2::text[], $3::text[], $4::integer[], $5, $6) AS stamps`;

/** $1 app id, $2 stamps, $3 async commit → the stamps that matched. */
export const RELEASE_GROUPS = `SELECT locking_release($1, $2::bigint[], $3) AS released`;

/** $1 app id → deletes every lock row of that app. */
export const RELEASE_ALL_OF_APP = `DELETE FROM locking WHERE app_id = $1`;

/** All permits rows. */
export const SELECT_ALL_PERMITS = `SELECT lock_name, mode, permits FROM locking_permissions`;

/** $1 name, $2 mode ('R'/'W'), $3 permits. */
export const UPSERT_PERMITS = `INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ($1, $2, $3)
  ON CONFLICT (lock_name, mode) DO UPDATE SET permits = EXCLUDED.permits`;

/** $1 name, $2 mode ('R'/'W'). */
export const DELETE_PERMITS = `DELETE FROM locking_permissions WHERE lock_name = $1 AND mode = $2`;
