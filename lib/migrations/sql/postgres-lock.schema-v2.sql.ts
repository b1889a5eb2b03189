/**
 * The second schema version: faster hot-path functions (`CREATE OR REPLACE`, same signatures) and no CHECK
 * constraints on the two tables every grant writes. Measured server time per call on the W1 benchmark's machine:
 * acquisition 110 → 55 µs, release 70 → 52 µs (README, "Design and performance").
 * @internal
 */
import * as Fragment from './postgres-lock.fragments.sql.js';
import { LIVE } from '../../store/lock-sql.constants.js';
import { RELEASE_FUNCTION_V1, TRY_ACQUIRE_FUNCTION_V1 } from './postgres-lock.schema.sql.js';

/*
 * INDEX_SCANS_ONLY: both functions plan their statements with sequential scans disabled (for their own transaction,
 * which is the call's). `locking` holds few live rows, so its statistics invite sequential scans, but it churns: between
 * two vacuums its heap fills with dead rows and every scan reads them all; and a plan made while `locking_log` was
 * small (a fresh install, an ANALYZE just after a prune) scans the whole log at every release until the next ANALYZE.
 * Measured after a VACUUM ANALYZE of the empty tables: W1 fell from 0.75 to 0.35 × the durable floor within 12 s
 * with sequential scans, and held steady with index scans.
 */

/*
 * Pieces shared by the batch functions and their one-lock, one-stamp twins (`…_one`), so that both decide with the
 * same text: the batch and the single call must never disagree on a grant.
 */

/**
 * The permits check of one name: sets `v_busy` for `v_name` in `v_mode` from the held rows and the permits. Later
 * versions reuse it with a writer-preference rule of their own.
 */
export const CHECK_PERMITS = `         v_busy := EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = v_name);
         IF v_busy THEN
           SELECT p.permits INTO v_permits FROM locking_permissions p WHERE p.lock_name = v_name AND p.mode = v_mode;
           IF NOT FOUND THEN
             v_permits := CASE v_mode WHEN 'W' THEN p_default_write ELSE p_default_read END;
           END IF;
           SELECT count(*) FILTER (WHERE h.mode = v_mode) >= v_permits OR count(*) FILTER (WHERE h.mode <> v_mode) > 0
             INTO v_busy
             FROM (SELECT l.mode FROM locking l WHERE l.lock_name = v_name LIMIT v_permits + 1) AS h;
         END IF;
`;

/** The check of one name: sets `v_busy` for `v_name` in `v_mode`, asked by the group of `v_waiter` (or null). */
const CHECK_NAME = `${CHECK_PERMITS}         -- Writer preference: a reader yields to a writer waiting for the name.
         IF NOT v_busy AND v_mode = 'R' THEN
           v_busy := EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = v_name AND w.mode = 'W'
                               AND w.expires > now() AND w.waiter IS DISTINCT FROM v_waiter);
         END IF;`;

/** The log row of the grant `v_stamp`, of the names and modes given as SQL expressions. */
const insertLogRow = (names: string, modes: string): string =>
  `         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
           VALUES (v_stamp, p_app_id, p_instance, ${names}, ${modes}::char(1)[], 'ACQUIRED',
                   now() + p_lease_ms * interval '1 millisecond');`;

/** Index scans only (see INDEX_SCANS_ONLY), and the commit of a release may skip the WAL flush (`p_async`). */
export const RELEASE_SETTINGS = `     PERFORM set_config('enable_seqscan', 'off', true), -- see INDEX_SCANS_ONLY
             CASE WHEN p_async THEN set_config('synchronous_commit', 'off', true) END;`;

/** Deletes the lock rows of the grant `v_stamp` of this app (FOUND when there were some). */
const DELETE_GRANT_ROWS = `DELETE FROM locking WHERE app_id = p_app_id AND stamp = v_stamp;`;

/** Turns the live log row of `v_stamp` RELEASED, its names into `v_names` (FOUND when there was one). */
const LOG_RELEASED = `UPDATE locking_log SET status = 'RELEASED', ended = now(), version = version + 1
          WHERE stamp = v_stamp AND status IN ${LIVE}
         RETURNING lock_names INTO v_names;`;

/** Notifies the freed names only when somebody waits for one of them (usually nobody: then nothing is sent). */
export const notifyWaitersOf = (names: string): string =>
  `IF cardinality(${names}) > 0 AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = ANY (${names})) THEN
       PERFORM locking_notify_freed(${names});
     END IF;`;

/**
 * One call acquires a batch of groups (the concurrent tryLocks of one process; usually just one): one round trip, one
 * commit. The batch's names are serialised with transaction advisory locks taken in sorted key order (no deadlock, no
 * serialization failure). Each statement of a VOLATILE function takes a fresh READ COMMITTED snapshot, so the checks
 * see every grant committed by the previous holder of an advisory lock (released only once its commit is visible),
 * and each group also sees the rows inserted for the groups before it in the batch.
 *
 * The check is lock by lock, cheapest question first. A name nobody holds is free whatever its permits (the table's
 * CHECK keeps them >= 1), so the uncontended case costs one index probe and never reads `locking_permissions`. A held
 * name reads its permits in the statement, from committed rows, never from a client cache, and then at most
 * permits + 1 of its rows: the group is refused when they hold `permits` rows of the same mode or any row of the
 * other mode (among permits + 1 rows, a name with fewer than `permits` rows of the asked mode always shows a row of
 * the other mode if it has one, whatever the scan order). `checkName` is the check of one name (a version's own
 * writer-preference rule after `CHECK_PERMITS`).
 * @internal
 */
export const tryAcquireFunction = (checkName: string): string => `CREATE OR REPLACE FUNCTION ${Fragment.TRY_ACQUIRE_SIGNATURE}
   DECLARE
${Fragment.TRY_ACQUIRE_VARIABLES}
     v_i       integer;
${Fragment.CHECK_VARIABLES}
   BEGIN
${Fragment.CHECK_BATCH_CALL}
${Fragment.LOCK_NAMES_THEN_EACH_GROUP}
       v_busy := false;
       FOR v_i IN v_from .. v_to LOOP
         v_name := p_names[v_i];
         v_mode := p_modes[v_i];
${checkName}
         EXIT WHEN v_busy;
       END LOOP;
       IF v_busy THEN
         v_stamps := v_stamps || 0::bigint;
       ELSE
         v_stamp := nextval('locking_stamp_seq');
         -- A one-lock group without an array to unnest (measured 5 µs cheaper).
         IF v_from = v_to THEN
           INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES (v_name, v_mode, p_app_id, v_stamp);
         ELSE
           INSERT INTO locking (lock_name, mode, app_id, stamp)
             SELECT r.name, r.mode, p_app_id, v_stamp FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode);
         END IF;
${insertLogRow('p_names[v_from:v_to]', 'p_modes[v_from:v_to]')}
${Fragment.RECORD_GRANT_AND_NEXT_GROUP}`;

/**
 * Releases a batch of stamps; returns those that matched a live grant of the app. Stamp by stamp, one indexed delete
 * each, and the log row turns RELEASED in the same transaction; whether anybody waits for the freed names is asked
 * once for the whole batch (usually nobody: then no notification is sent at all). The commit may skip waiting for
 * the WAL flush: freeing a lock early can never break exclusion, and the next durable grant flushes it anyway.
 */
export const RELEASE_FUNCTION_V2 = `CREATE OR REPLACE FUNCTION ${Fragment.RELEASE_SIGNATURE}
   DECLARE
     v_stamp    bigint;
     v_names    text[];
     v_freed    text[] := '{}';
     v_released bigint[] := '{}';
   BEGIN
${RELEASE_SETTINGS}
     FOREACH v_stamp IN ARRAY p_stamps LOOP
       ${DELETE_GRANT_ROWS}
       IF FOUND THEN
         ${LOG_RELEASED}
         IF FOUND THEN
           v_released := v_released || v_stamp;
           v_freed := v_freed || v_names;
         END IF;
       END IF;
     END LOOP;
     ${notifyWaitersOf('v_freed')}
     RETURN v_released;
   END
   $fn$`;

/** Signature of the one-lock acquisition (the common call: one caller, a group of one lock). */
const TRY_ACQUIRE_ONE_SIGNATURE = `locking_try_acquire_one(p_app_id text, p_instance text, p_name text, p_mode text,
                                          p_waiter text, p_default_read integer, p_default_write integer,
                                          p_lease_ms integer)`;

/**
 * `locking_try_acquire` for a batch of one group of one lock, with scalars instead of arrays: the same advisory
 * lock, the same check and the same rows, for 12 µs less server time per call (no arrays to parse, no loops).
 * `checkName` as for `tryAcquireFunction`.
 * @internal
 */
export const tryAcquireOneFunction = (checkName: string): string => `CREATE OR REPLACE FUNCTION ${TRY_ACQUIRE_ONE_SIGNATURE}
${Fragment.ONE_LOCK_CALL}
${checkName}
     IF v_busy THEN
       RETURN 0;
     END IF;
     v_stamp := nextval('locking_stamp_seq');
     INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES (v_name, v_mode, p_app_id, v_stamp);
${insertLogRow('ARRAY[v_name]', 'ARRAY[v_mode]')}
${Fragment.DROP_WAITER_ROWS}
     RETURN v_stamp;
   END
   $fn$`;

/** `locking_release` for one stamp, with scalars: true when it matched a live grant of the app. */
export const RELEASE_ONE_FUNCTION = `CREATE OR REPLACE FUNCTION locking_release_one(p_app_id text, p_stamp bigint, p_async boolean)
   RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_stamp ALIAS FOR p_stamp;
     v_names text[];
   BEGIN
${RELEASE_SETTINGS}
     ${DELETE_GRANT_ROWS}
     IF NOT FOUND THEN
       RETURN false;
     END IF;
     ${LOG_RELEASED}
     IF NOT FOUND THEN
       RETURN false;
     END IF;
     ${notifyWaitersOf('v_names')}
     RETURN true;
   END
   $fn$`;

/**
 * PostgreSQL re-reads a table's CHECK constraints from their stored text and compiles them at every statement that
 * writes the table: for `locking` and `locking_log` that was 7 to 8 µs per statement, a third of an insert. Only
 * the engine's functions write these columns, with constant statuses and modes they check themselves.
 */
const DROP_HOT_PATH_CHECKS = [
  `ALTER TABLE locking DROP CONSTRAINT IF EXISTS locking_mode_ck`,
  `ALTER TABLE locking_log DROP CONSTRAINT IF EXISTS locking_log_status_ck`,
];

/** The acquisition functions as the second version installs them (and the fourth one's `down` restores). */
export const TRY_ACQUIRE_FUNCTION_V2 = tryAcquireFunction(CHECK_NAME);
/** The one-lock twin as the second version installs it. */
export const TRY_ACQUIRE_ONE_FUNCTION_V2 = tryAcquireOneFunction(CHECK_NAME);

/** Installs the second schema version. */
export const UPGRADE_LOCK_SCHEMA_V2: readonly string[] = [
  ...DROP_HOT_PATH_CHECKS,
  TRY_ACQUIRE_FUNCTION_V2,
  RELEASE_FUNCTION_V2,
  TRY_ACQUIRE_ONE_FUNCTION_V2,
  RELEASE_ONE_FUNCTION,
];

/** Puts the first version back. */
export const DOWNGRADE_LOCK_SCHEMA_V2: readonly string[] = [
  `DROP FUNCTION IF EXISTS locking_release_one(text, bigint, boolean)`,
  `DROP FUNCTION IF EXISTS locking_try_acquire_one(text, text, text, text, text, integer, integer, integer)`,
  ...[TRY_ACQUIRE_FUNCTION_V1, RELEASE_FUNCTION_V1].map((statement) =>
    statement.replace(/^CREATE FUNCTION /, 'CREATE OR REPLACE FUNCTION '),
  ),
  `ALTER TABLE locking ADD CONSTRAINT locking_mode_ck CHECK (mode IN ('R', 'W'))`,
  `ALTER TABLE locking_log ADD CONSTRAINT locking_log_status_ck
     CHECK (status IN ('ACQUIRED', 'BUSINESS_DONE', 'RELEASED', 'REAPED', 'RECOVERED'))`,
];
