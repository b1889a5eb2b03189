/**
 * The PostgreSQL schema of nestjs-db-locks: sequence, tables and the engine's functions, as run by the first shipped
 * migration (`postgres-lock.schema-v2.sql.ts` has the second). Statements of the running engine are in `lib/store/postgres/postgres-lock.queries.sql.ts`.
 * @internal
 */
import { LIVE, NOTIFY_CHANNEL } from '../../store/lock-sql.constants.js';
import * as Fragment from './postgres-lock.fragments.sql.js';


/**
 * `locking_try_acquire` as created by the first migration (and restored by the second one's `down`).
 *
 * One call acquires a batch of groups (the concurrent tryLocks of one process; usually just one): one round trip,
 * one commit. The batch's names are serialised with transaction advisory locks taken in sorted key order (no
 * deadlock, no serialization failure). Each statement of a VOLATILE function takes a fresh READ COMMITTED snapshot,
 * so the checks see every grant committed by the previous holder of an advisory lock (released only once its commit
 * is visible), and each group also sees the rows inserted for the groups before it in the batch. Permits are read
 * in the check, from committed rows, never from a client cache. Measured choices (README, "Design and
 * performance"): queueing on a busy name beats answering 0 early, and the check is inline because PL/pgSQL caches
 * its plan where a separate SQL function would be planned on every call.
 */
export const TRY_ACQUIRE_FUNCTION_V1 = `CREATE FUNCTION ${Fragment.TRY_ACQUIRE_SIGNATURE}
   DECLARE
${Fragment.TRY_ACQUIRE_VARIABLES}
   BEGIN
${Fragment.REQUIRE_READ_COMMITTED}
${Fragment.LOCK_NAMES_THEN_EACH_GROUP}
       IF EXISTS (
         SELECT 1
         FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]::char(1)[]) AS r(name, mode)
         LEFT JOIN locking_permissions p ON p.lock_name = r.name AND p.mode = r.mode
         CROSS JOIN LATERAL (SELECT coalesce(p.permits,
                               CASE r.mode WHEN 'W' THEN p_default_write ELSE p_default_read END) AS permits) AS lim
         WHERE EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = r.name AND l.mode <> r.mode)
            OR (SELECT count(*) FROM (SELECT 1 FROM locking l WHERE l.lock_name = r.name AND l.mode = r.mode
                                      LIMIT lim.permits) AS held) >= lim.permits
            -- Writer preference: a reader yields to a writer waiting for the name.
            OR (r.mode = 'R' AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = r.name AND w.mode = 'W'
                                         AND w.expires > now() AND w.waiter IS DISTINCT FROM v_waiter))
       ) THEN
         v_stamps := v_stamps || 0::bigint;
       ELSE
         v_stamp := nextval('locking_stamp_seq');
         -- The lock rows and the log row in one statement.
         WITH locks AS (
           INSERT INTO locking (lock_name, mode, app_id, stamp)
             SELECT r.name, r.mode, p_app_id, v_stamp FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode))
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
           VALUES (v_stamp, p_app_id, p_instance, p_names[v_from:v_to], p_modes[v_from:v_to]::char(1)[], 'ACQUIRED',
                   now() + p_lease_ms * interval '1 millisecond');
${Fragment.RECORD_GRANT_AND_NEXT_GROUP}`;

/**
 * `locking_release` as created by the first migration (and restored by the second one's `down`).
 *
 * Releases a batch of stamps; returns those that matched a row of the app. Stamp by stamp (measured faster than one
 * `stamp = ANY($2)` delete for the usual single stamp); the log row turns RELEASED in the same transaction. The
 * commit may skip waiting for the WAL flush: freeing a lock early can never break exclusion, and the next durable
 * grant flushes it anyway.
 */
export const RELEASE_FUNCTION_V1 = `CREATE FUNCTION ${Fragment.RELEASE_SIGNATURE}
   DECLARE
     v_stamp    bigint;
     v_names    text[];
     v_waited   boolean;
     v_freed    text[] := '{}';
     v_released bigint[] := '{}';
   BEGIN
     IF p_async THEN
       PERFORM set_config('synchronous_commit', 'off', true);
     END IF;
     FOREACH v_stamp IN ARRAY p_stamps LOOP
       -- One statement per stamp (measured cheaper than three): delete the lock rows, log RELEASED, and learn
       -- whether anybody waits for the names (usually nobody: then no notification is sent at all).
       WITH deleted AS (DELETE FROM locking WHERE app_id = p_app_id AND stamp = v_stamp RETURNING 1)
       UPDATE locking_log SET status = 'RELEASED', ended = now(), version = version + 1
        WHERE stamp = v_stamp AND status IN ${LIVE} AND EXISTS (SELECT 1 FROM deleted)
       RETURNING lock_names, EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = ANY (lock_names))
         INTO v_names, v_waited;
       IF FOUND THEN
         v_released := v_released || v_stamp;
         IF v_waited THEN
           v_freed := v_freed || v_names;
         END IF;
       END IF;
     END LOOP;
     IF cardinality(v_freed) > 0 THEN
       PERFORM locking_notify_freed(v_freed);
     END IF;
     RETURN v_released;
   END
   $fn$`;

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
  // The lock log (seed 002): one row per grant, written in the same transaction as the state change it records.
  `CREATE TABLE locking_log (
     stamp         bigint         PRIMARY KEY,
     app_id        varchar(200)   NOT NULL,
     instance      varchar(200)   NOT NULL,
     lock_names    varchar(200)[] NOT NULL,
     lock_modes    char(1)[]      NOT NULL,
     status        varchar(16)    NOT NULL,
     acquired      timestamptz    NOT NULL DEFAULT now(),
     lease_expires timestamptz    NOT NULL,
     business_done timestamptz,
     ended         timestamptz,
     version       integer        NOT NULL DEFAULT 1,
     CONSTRAINT locking_log_status_ck
       CHECK (status IN ('ACQUIRED', 'BUSINESS_DONE', 'RELEASED', 'REAPED', 'RECOVERED'))
   )`,
  // Only the primary key is a btree, and fillfactor leaves room on each page: releases and renewals are then HOT
  // updates (no index entry to write). Live grants are found through `locking` (small) and old rows through a BRIN
  // index on `acquired` (stamps, and so rows, are in acquisition order).
  `ALTER TABLE locking_log SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.05,
     autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)`,
  `CREATE INDEX locking_log_acquired_brin ON locking_log USING brin (acquired)`,
  `CREATE TABLE locking_permissions (
     lock_name varchar(200) NOT NULL,
     mode      char(1)      NOT NULL,
     permits   integer      NOT NULL,
     CONSTRAINT locking_permissions_pk PRIMARY KEY (lock_name, mode),
     CONSTRAINT locking_permissions_mode_ck CHECK (mode IN ('R', 'W')),
     CONSTRAINT locking_permissions_permits_ck CHECK (permits >= 1)
   )`,
  // Waiters (tryLocks with waitMs): a row per (name, waiter) while it waits, refreshed, expiring on its own if the
  // waiter dies. A waiting writer's row makes new readers of the name yield (writer preference, no starvation), and
  // a release notifies only names that have waiters (NOTIFY serialises committing transactions: pay it only then).
  `CREATE TABLE locking_waiters (
     lock_name varchar(200) NOT NULL,
     waiter    varchar(64)  NOT NULL,
     mode      char(1)      NOT NULL,
     app_id    varchar(200) NOT NULL,
     expires   timestamptz  NOT NULL,
     CONSTRAINT locking_waiters_pk PRIMARY KEY (lock_name, waiter)
   )`,
  `CREATE INDEX locking_waiters_waiter_idx ON locking_waiters (waiter)`,
  // Wakes the waiters whose names were freed (payload: the names, one per line; '*' = everyone).
  `CREATE FUNCTION locking_notify_freed(p_names text[])
   RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
   BEGIN
     IF cardinality(p_names) > 0 AND EXISTS (SELECT 1 FROM locking_waiters WHERE lock_name = ANY (p_names)) THEN
       PERFORM pg_notify('${NOTIFY_CHANNEL}',
         CASE WHEN octet_length(array_to_string(p_names, E'\\n')) > 7000 THEN '*' ELSE array_to_string(p_names, E'\\n') END);
     END IF;
   END
   $fn$`,
  `CREATE FUNCTION locking_permissions_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
   BEGIN
     PERFORM pg_notify('${NOTIFY_CHANNEL}', '*');
     RETURN NULL;
   END
   $fn$`,
  `CREATE TRIGGER locking_permissions_notify AFTER INSERT OR UPDATE OR DELETE ON locking_permissions
     FOR EACH STATEMENT EXECUTE FUNCTION locking_permissions_changed()`,
  TRY_ACQUIRE_FUNCTION_V1,
  RELEASE_FUNCTION_V1,
  // Extends the leases of an app's grants (one statement for all of them); returns the stamps still held.
  `CREATE FUNCTION locking_renew(p_app_id text, p_stamps bigint[], p_lease_ms integer)
   RETURNS bigint[] LANGUAGE sql VOLATILE AS $fn$
     WITH renewed AS (
       UPDATE locking_log SET lease_expires = now() + p_lease_ms * interval '1 millisecond', version = version + 1
        WHERE stamp = ANY (p_stamps) AND app_id = p_app_id AND status IN ${LIVE}
       RETURNING stamp)
     SELECT coalesce(array_agg(stamp), '{}') FROM renewed
   $fn$`,
  // Frees a batch of stale grants: lease expired (or held longer than p_max_hold_ms when > 0). Safe on every node at
  // once: candidates are locked with SKIP LOCKED (a grant whose holder is inside markBusinessDone's transaction is
  // left to the next run) and moved to REAPED only if their version is unchanged (seed 002's optimistic update), so
  // each grant gets exactly one terminal status. Returns the stamps reaped.
  `CREATE FUNCTION locking_reap(p_batch integer, p_max_hold_ms bigint)
   RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_reaped bigint[];
     v_freed  text[];
   BEGIN
     WITH stale AS (
       SELECT stamp, version FROM locking_log
        WHERE stamp IN (SELECT stamp FROM locking) AND status IN ${LIVE}
          AND (lease_expires < now() OR (p_max_hold_ms > 0 AND acquired < now() - p_max_hold_ms * interval '1 millisecond'))
        ORDER BY lease_expires
        LIMIT p_batch
        FOR UPDATE SKIP LOCKED),
     reaped AS (
       UPDATE locking_log l SET status = 'REAPED', ended = now(), version = l.version + 1
         FROM stale s WHERE l.stamp = s.stamp AND l.version = s.version
       RETURNING l.stamp)
     SELECT coalesce(array_agg(stamp), '{}') INTO v_reaped FROM reaped;
     WITH freed AS (DELETE FROM locking WHERE stamp = ANY (v_reaped) RETURNING lock_name)
     SELECT coalesce(array_agg(DISTINCT lock_name), '{}') INTO v_freed FROM freed;
     PERFORM locking_notify_freed(v_freed);
     DELETE FROM locking_waiters WHERE expires < now() - interval '1 minute';
     RETURN v_reaped;
   END
   $fn$`,
  // Start-up recovery (seed 000's releaseAllLocks): frees every lock of the app and marks its live grants RECOVERED.
  `CREATE FUNCTION locking_recover(p_app_id text)
   RETURNS integer LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_freed text[];
   BEGIN
     UPDATE locking_log SET status = 'RECOVERED', ended = now(), version = version + 1
      WHERE stamp IN (SELECT stamp FROM locking WHERE app_id = p_app_id) AND status IN ${LIVE};
     DELETE FROM locking_waiters WHERE app_id = p_app_id;
     WITH freed AS (DELETE FROM locking WHERE app_id = p_app_id RETURNING lock_name)
     SELECT coalesce(array_agg(lock_name), '{}') INTO v_freed FROM freed;
     PERFORM locking_notify_freed(v_freed);
     RETURN cardinality(v_freed);
   END
   $fn$`,
];

/** Drops everything `CREATE_LOCK_SCHEMA` created. */
export const DROP_LOCK_SCHEMA: readonly string[] = [
  `DROP FUNCTION IF EXISTS locking_recover(text)`,
  `DROP FUNCTION IF EXISTS locking_reap(integer, bigint)`,
  `DROP FUNCTION IF EXISTS locking_renew(text, bigint[], integer)`,
  `DROP FUNCTION IF EXISTS locking_release(text, bigint[], boolean)`,
  `DROP FUNCTION IF EXISTS locking_try_acquire(text, text, text[], text[], integer[], text[], integer, integer, integer)`,
  `DROP TRIGGER IF EXISTS locking_permissions_notify ON locking_permissions`,
  `DROP FUNCTION IF EXISTS locking_permissions_changed()`,
  `DROP FUNCTION IF EXISTS locking_notify_freed(text[])`,
  `DROP TABLE IF EXISTS locking_waiters`,
  `DROP TABLE IF EXISTS locking_permissions`,
  `DROP TABLE IF EXISTS locking_log`,
  `DROP TABLE IF EXISTS locking`,
  `DROP SEQUENCE IF EXISTS locking_stamp_seq`,
];
