/**
 * The ninth schema version: a release hands the name it frees over to the next waiter, in its own transaction
 * (issue 51; docs/design.md, "A hot name: the hand-over inside the release"). `locking_waiters` gets what a grant
 * needs that the releaser does not know (the waiter's instance, default permits and lease, `handover` for rows of an
 * instance that can take one, `granted` for the stamp handed over); the release functions call `locking_hand_over`;
 * the acquisition functions let a waiter take a grant handed to it (its re-check after a lost notification) and reap
 * the lapsed grants of its names. `down` restores the eighth version's functions and drops the columns. Safe while
 * instances run: rows of older instances have `handover` false and are never handed a grant; older functions ignore
 * the new columns.
 * @internal
 */
import * as Fragment from './postgres-lock.fragments.sql.js';
import { LIVE } from '../../store/lock-sql.constants.js';
import {
  RELEASE_FUNCTION_V3,
  RELEASE_GRANT,
  RELEASE_ONE_FUNCTION_V3,
  releaseFunction,
  releaseOneFunction,
} from './postgres-lock.schema-v3.sql.js';
import { groupBusy } from './postgres-lock.schema-v6.sql.js';
import { NOT_WAITING } from './postgres-lock.schema-v4.sql.js';
import { CHECK_NAME_IN_ORDER, waiterBefore } from './postgres-lock.schema-v7.sql.js';
import { HELD_BY_PROBE } from './postgres-lock.schema-v8.sql.js';
import { CREATE_LOCK_SCHEMA } from './postgres-lock.schema.sql.js';

/*
 * HANDED_OVER: a release that frees names some live waiter waits for takes the earliest such waiter (smallest `seq`)
 * and, if its rows say it can take a hand-over, runs for its whole group the acquisition's own check under the
 * acquisition's own advisory locks (sorted keys, so no lock order an acquisition does not use): permits, modes, the
 * waiters before it, the group all or nothing. Granted: a stamp from the sequence (tokens stay in grant order per
 * name: the advisory locks are held until the commit), the lock rows, the ACQUIRED log row, and the waiter's rows
 * marked `granted` (their `expires` set to now: they no longer hold anybody back, and a refresh no longer extends
 * them; the grant's release, its claim by the waiter or its reaping removes them). The grant's lease ends when the waiter's own promise to be alive ends (its rows' `expires`, capped at its
 * lease): a waiter that is gone costs its rows' time to live, not a lease. The commit is durable (the release's own
 * `asyncRelease` is dropped for it), and the waiter is told with a notification `chr(1) waiter stamp`, sent at the
 * commit. The rows are locked before they are read: a refresh, the waiter's own grant or its removal either
 * committed before (and is seen) or waits for this commit.
 */

/*
 * HANDED_OVER_LEASE: the waiter did not send the statement that made a grant handed over, so it counts the grant's
 * lease from the attempt that set its rows' end: every refused attempt answers minus that end (in ms), the hand-over's
 * notification names the end it copied, and the waiter takes the grant only when it finds the attempt that answered
 * that end (among its last ones); its deadline is that attempt's send time + the rows' time to live, before the
 * database's. An attempt made after the hand-over (after a pause, say) answers another end; a grant whose attempt
 * the waiter cannot name, or whose lease has already ended by its count, is left to its next attempt, made at once,
 * which claims it with a lease counted from itself (or reaps it if the database's lease ended).
 */

/** The end of waiter rows `expires` (a timestamptz expression) as whole epoch milliseconds. */
const ROWS_END_MS = (expires: string): string => `floor(extract(epoch FROM ${expires}) * 1000)::bigint`;

/** Columns of `locking_waiters` for a hand-over (all null or false on rows of older instances). */
const ADD_HANDOVER_COLUMNS = `ALTER TABLE locking_waiters
  ADD COLUMN instance character varying(200),
  ADD COLUMN default_read integer,
  ADD COLUMN default_write integer,
  ADD COLUMN lease_ms integer,
  ADD COLUMN handover boolean NOT NULL DEFAULT false,
  ADD COLUMN granted bigint`;

/** The rows of a grant handed over, found by its release (few rows at any time: a partial index). */
const CREATE_GRANTED_INDEX = `CREATE INDEX locking_waiters_granted_idx ON locking_waiters (granted) WHERE granted IS NOT NULL`;

const DROP_HANDOVER_COLUMNS = `ALTER TABLE locking_waiters
  DROP COLUMN instance, DROP COLUMN default_read, DROP COLUMN default_write, DROP COLUMN lease_ms,
  DROP COLUMN handover, DROP COLUMN granted`;

/**
 * The hand-over's functions plan their statements once per session (generic plans, for the call only): PL/pgSQL
 * plans a statement with its parameters' values for its first five runs and keeps a generic plan only when the planner
 * estimates it no dearer, which it never did for these; planning each statement again cost more than running it
 * (measured with `track_functions`: `locking_reap_lapsed` 0.41 ms a call, 0.11 ms with generic plans, whose plans use
 * the same indexes: `locking_pk`, `locking_waiters_pk`, `locking_log_pkey`).
 */
const GENERIC_PLANS = `SET plan_cache_mode = force_generic_plan`;

/**
 * Ends the grants holding `p_names` whose lease has ended (REAPED, as the reaper does, in the same order: the log row
 * first, skipped when another transaction holds it, then the lock rows), and notifies the names freed. Called by a
 * waiter's attempt under its names' advisory locks: a grant handed to a waiter that is gone frees the name at the
 * next attempt after its short lease, not at the reaper's next tick.
 */
const REAP_LAPSED_FUNCTION = `CREATE OR REPLACE FUNCTION locking_reap_lapsed(p_names text[])
   RETURNS void LANGUAGE plpgsql VOLATILE ${GENERIC_PLANS} AS $fn$
   DECLARE
     v_reaped bigint[];
     v_freed  text[];
   BEGIN
     WITH lapsed AS (
       SELECT g.stamp FROM locking_log g
        WHERE g.stamp IN (SELECT l.stamp FROM locking l WHERE l.lock_name = ANY (p_names))
          AND g.status IN ${LIVE} AND g.lease_expires < now()
        FOR UPDATE SKIP LOCKED),
     reaped AS (
       UPDATE locking_log g SET status = 'REAPED', ended = now(), version = g.version + 1
         FROM lapsed s WHERE g.stamp = s.stamp
       RETURNING g.stamp)
     SELECT array_agg(stamp) INTO v_reaped FROM reaped;
     IF v_reaped IS NOT NULL THEN
       WITH freed AS (DELETE FROM locking WHERE stamp = ANY (v_reaped) RETURNING lock_name)
       SELECT coalesce(array_agg(DISTINCT lock_name), '{}') INTO v_freed FROM freed;
       DELETE FROM locking_waiters WHERE granted = ANY (v_reaped);
       PERFORM locking_notify_freed(v_freed);
     END IF;
   END
   $fn$`;

/**
 * `p_freed` were just freed by this transaction (a release); `p_sync` is the caller's `synchronous_commit` before the
 * release changed it. Hands the freed names over (see HANDED_OVER), then notifies the freed names that were not
 * handed over for writing (to the other waiters, as before).
 */
const HAND_OVER_FUNCTION = `CREATE OR REPLACE FUNCTION locking_hand_over(p_freed text[], p_sync text)
   RETURNS void LANGUAGE plpgsql VOLATILE ${GENERIC_PLANS} AS $fn$
   DECLARE
     v_waiter        text;
     v_from          integer := 1;
     v_to            integer;
     p_names         text[];
     p_modes         text[];
     p_default_read  integer;
     p_default_write integer;
     v_app           text;
     v_instance      text;
     v_expires       timestamptz;
     v_lease_ms      integer;
     v_ready         boolean;
     v_stamp         bigint;
   BEGIN
     -- The earliest live waiter of the freed names, and all of its rows, locked (its own attempt or clean-up waits; an
     -- attempt behind it does not, see BEHIND_A_WAITER); a hand-over only when every one is live, not handed a grant
     -- yet, and was written by an instance that takes hand-overs.
     SELECT min(s.waiter), array_agg(s.lock_name::text ORDER BY s.lock_name COLLATE "C"),
            array_agg(s.mode::text ORDER BY s.lock_name COLLATE "C"), min(s.expires), min(s.app_id), min(s.instance),
            min(s.default_read), min(s.default_write), min(s.lease_ms), bool_and(s.handover AND s.granted IS NULL AND s.expires > now())
       INTO v_waiter, p_names, p_modes, v_expires, v_app, v_instance, p_default_read, p_default_write, v_lease_ms, v_ready
       FROM (SELECT w.waiter, w.lock_name, w.mode, w.expires, w.app_id, w.instance, w.default_read, w.default_write,
                    w.lease_ms, w.handover, w.granted
               FROM locking_waiters w
              WHERE w.waiter = (SELECT f.waiter FROM locking_waiters f
                                 WHERE f.lock_name = ANY (p_freed) AND f.expires > now() ORDER BY f.seq LIMIT 1)
                FOR NO KEY UPDATE OF w) AS s;
     IF v_waiter IS NOT NULL THEN
       v_to := cardinality(p_names);
       -- The freed names' advisory locks are held (RELEASE_SEES_WAITERS); the waiter's other names' are only tried:
       -- waiting for them out of order could deadlock with an acquisition. Not all free: no hand-over.
       IF v_ready AND v_to > 1 THEN
         v_ready := (SELECT coalesce(bool_and(pg_try_advisory_xact_lock(${Fragment.ADVISORY_NAMESPACE}, keys.k)), true)
                       FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(p_names) AS n WHERE n <> ALL (p_freed)) AS keys);
       END IF;
       -- ONE_NAME_FREE: a waiter of one name that nobody holds any more takes it. No waiter before it can hold it back:
       -- it is the earliest live one of the freed names. Otherwise the acquisition's own check, whole.
       IF v_ready AND NOT (v_to = 1 AND NOT EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = p_names[1])) THEN
         v_ready := NOT EXISTS (${groupBusy(waiterBefore('r.name', 'r.mode'), HELD_BY_PROBE)});
       END IF;
       IF v_ready THEN
         v_stamp := nextval('locking_stamp_seq');
         WITH handed AS (UPDATE locking_waiters SET granted = v_stamp, expires = now() WHERE waiter = v_waiter),
              held AS (INSERT INTO locking (lock_name, mode, app_id, stamp)
                         SELECT r.name, r.mode, v_app, v_stamp FROM unnest(p_names, p_modes) AS r(name, mode))
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
           VALUES (v_stamp, v_app, v_instance, p_names, p_modes::char(1)[], 'ACQUIRED',
                   least(v_expires, now() + v_lease_ms * interval '1 millisecond'));
         -- A grant is durable, whatever the release asked for itself (asyncRelease): see DURABLE_COMMIT.
         PERFORM set_config('synchronous_commit', CASE p_sync WHEN 'off' THEN 'on' ELSE p_sync END, true),
                 pg_notify('nestjs_db_locks', chr(1) || v_waiter || ' ' || v_stamp || ' ' || ${ROWS_END_MS('v_expires')});
         -- The names handed over for writing are not free any more; those handed for reading are (to other readers).
         IF v_to = 1 THEN
           IF p_modes[1] = 'W' THEN
             p_freed := array_remove(p_freed, p_names[1]);
           END IF;
         ELSE
           p_freed := ARRAY(SELECT f FROM unnest(p_freed) AS f
                             WHERE f <> ALL (ARRAY(SELECT r.name FROM unnest(p_names, p_modes) AS r(name, mode) WHERE r.mode = 'W')));
         END IF;
       END IF;
     END IF;
     IF cardinality(p_freed) > 0 THEN
       PERFORM locking_notify_freed(p_freed);
     END IF;
   END
   $fn$`;

/**
 * RELEASE_GRANT (third version), and the waiter rows of a grant handed over go with its release: the waiter that took
 * it sends no statement to remove them (one index probe, of an almost empty partial index, per release).
 */
const RELEASE_GRANT_V4 = RELEASE_GRANT.replace(
  'DELETE FROM locking WHERE stamp = v_stamp;',
  'DELETE FROM locking WHERE stamp = v_stamp;\n         DELETE FROM locking_waiters WHERE granted = v_stamp;',
);

/**
 * After a release freed `names`: their advisory locks (RELEASE_SEES_WAITERS: in sorted key order, as an acquisition
 * takes them), then the hand-over, only when somebody waits for one of them (usually nobody).
 */
const handOverOrNotify = (names: string): string =>
  `IF cardinality(${names}) = 1 THEN
       PERFORM pg_advisory_xact_lock(${Fragment.ADVISORY_NAMESPACE}, hashtext(${names}[1]));
     ELSIF cardinality(${names}) > 1 THEN
       PERFORM pg_advisory_xact_lock(${Fragment.ADVISORY_NAMESPACE}, keys.k)
          FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(${names}) AS n ORDER BY 1) AS keys;
     END IF;
     IF cardinality(${names}) > 0 AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = ANY (${names})) THEN
       PERFORM locking_hand_over(${names}, v_sync);
     END IF;`;

/** The caller's `synchronous_commit` before the release changes it (see `locking_hand_over`). */
const SYNC_VARIABLE = `
     v_sync     text := current_setting('synchronous_commit');`;

/** `locking_release`, fourth version: the third's, then the hand-over of what the batch freed. */
const RELEASE_FUNCTION_V4 = releaseFunction(RELEASE_GRANT_V4, handOverOrNotify, SYNC_VARIABLE);

/** `locking_release_one`, fourth version: the third's, then the hand-over. */
const RELEASE_ONE_FUNCTION_V4 = releaseOneFunction(RELEASE_GRANT_V4, handOverOrNotify, SYNC_VARIABLE);

/**
 * The start of a waiter's attempt (`v_waiter` not null), under its names' advisory locks: a grant handed to it that
 * is still live becomes its own (its rows go, its lease is counted from this statement, as for a grant it makes: its
 * holder counts from the moment it sent it) and is `v_stamp`; otherwise `v_stamp` is null and the lapsed grants of
 * `names` are reaped (a grant handed to this waiter whose short lease ended among them) before the check.
 */
const claimHandedOver = (names: string): string => `         SELECT w.granted INTO v_stamp FROM locking_waiters w
          WHERE w.waiter = v_waiter AND w.granted IS NOT NULL LIMIT 1;
         IF v_stamp IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
           UPDATE locking_log SET lease_expires = now() + p_lease_ms * interval '1 millisecond', version = version + 1
            WHERE stamp = v_stamp AND status IN ${LIVE} AND lease_expires > now();
           IF NOT FOUND THEN
             v_stamp := NULL;
           END IF;
         END IF;
         IF v_stamp IS NULL THEN
           PERFORM locking_reap_lapsed(${names});
         END IF;`;

/**
 * A refused waiter registers (or refreshes) its rows in the same transaction, for `p_ttl_ms`, with what a hand-over
 * needs (see HANDED_OVER), and its answer is minus the rows' end (`ROWS_END_MS`): the waiter matches it with the end a
 * hand-over names (see HANDED_OVER_LEASE). Rows already handed a grant are left as they are (the claim before it
 * removed them). The rows are soft state: when this is all
 * the transaction wrote, it commits without waiting for the disk (a crash may lose them: the waiter's next attempt
 * puts them back; a grant later handed over to them commits durably, and a durable commit flushes them with it).
 */
const registerRefused = (names: string, modes: string): string => `         INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, instance, default_read, default_write,
                                      lease_ms, handover)
           SELECT r.name, v_waiter, r.mode, p_app_id, now() + p_ttl_ms * interval '1 millisecond', p_instance,
                  p_default_read, p_default_write, p_lease_ms, true
             FROM unnest(${names}, ${modes}) AS r(name, mode)
           ON CONFLICT (lock_name, waiter) DO UPDATE SET expires = EXCLUDED.expires WHERE locking_waiters.granted IS NULL;
         PERFORM set_config('synchronous_commit', 'off', true);
         v_stamp := -${ROWS_END_MS('now() + p_ttl_ms * interval \'1 millisecond\'')};`;

/*
 * WAIT_IN_ONE_ROUND_TRIP: a waiter's attempt and its registration are one statement (`locking_wait_acquire…`): it
 * claims a grant handed to it, or checks and grants as `locking_try_acquire…` does, or registers its rows when
 * refused, all under its names' advisory locks. No release can slip between the check and the registration unseen
 * (RELEASE_SEES_WAITERS): a release takes the advisory locks of the names it freed before it looks for their waiters.
 * A release that took them first has committed when the attempt gets them (its check sees the name free); one that
 * comes after waits for the attempt's commit, and its search for waiters sees the rows registered. The release takes
 * them after its own rows' locks, and an attempt never waits for a row a release holds (the reaping in it skips locked
 * rows): no deadlock. A forced release, the reaper and start-up recovery do not take them: a waiter they free without
 * seeing it is woken by its re-check (`waitRecheckMs`), as before.
 */

/** Name, parameters and kind of `locking_wait_acquire`: `locking_try_acquire`'s, and the waiters' time to live. */
const WAIT_ACQUIRE_SIGNATURE = `locking_wait_acquire(p_app_id text, p_instance text, p_names text[], p_modes text[],
                                      p_group_ends integer[], p_waiters text[], p_default_read integer,
                                      p_default_write integer, p_lease_ms integer, p_ttl_ms integer)
   RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $fn$`;

/** `locking_wait_acquire`: a batch of groups (see WAIT_IN_ONE_ROUND_TRIP), decided as `locking_try_acquire` (eighth). */
const WAIT_ACQUIRE_FUNCTION = `CREATE OR REPLACE FUNCTION ${WAIT_ACQUIRE_SIGNATURE}
${Fragment.BATCH_CALL_THEN_EACH_GROUP}
       v_stamp := NULL;
       IF v_waiter IS NOT NULL THEN
${claimHandedOver('p_names[v_from:v_to]')}
       END IF;
       IF v_stamp IS NULL THEN
         IF v_from = v_to THEN
           v_name := p_names[v_from];
           v_mode := p_modes[v_from];
${CHECK_NAME_IN_ORDER}
         ELSE
           v_busy := EXISTS (${groupBusy(waiterBefore('r.name', 'r.mode'), HELD_BY_PROBE)});
         END IF;
         IF v_busy THEN
           v_stamp := 0;
           IF v_waiter IS NOT NULL THEN
  ${registerRefused('p_names[v_from:v_to]', 'p_modes[v_from:v_to]')}
           END IF;
         ELSE
           v_stamp := nextval('locking_stamp_seq');
           INSERT INTO locking (lock_name, mode, app_id, stamp)
             SELECT r.name, r.mode, p_app_id, v_stamp FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode);
           INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
             VALUES (v_stamp, p_app_id, p_instance, p_names[v_from:v_to], p_modes[v_from:v_to]::char(1)[], 'ACQUIRED',
                     now() + p_lease_ms * interval '1 millisecond');
${Fragment.DROP_WAITER_ROWS}
         END IF;
       END IF;
       v_stamps := v_stamps || v_stamp;
       v_from := v_to + 1;
     END LOOP;
     RETURN v_stamps;
   END
   $fn$`;

/*
 * BEHIND_A_WAITER: a waiter's attempt on one name that an earlier live waiter of a conflicting mode waits for (one
 * waiting for that name alone, so nothing else holds it back: GRANTABLE_ONLY) is refused without the name's advisory
 * lock: the order refuses it whatever is held. It only registers (or refreshes) its rows, so on a hot name the
 * callers queueing up no longer take turns with the releases for that lock (each release waited for the attempt in
 * front of it). What the advisory lock gave (RELEASE_SEES_WAITERS) comes from that earlier waiter's row instead: the
 * attempt holds it `FOR KEY SHARE` until its commit, which lets a hand-over mark it but not remove it (its waiter's
 * own grant, its leaving, its grant's release, the reaper and recovery all wait). So until this registration is
 * seen, every release of the name sees a waiter and hands the name over (a writer holds it: its release comes after
 * and sees this row, or sees the earlier row again) or notifies it (this waiter tries again at once: a notification
 * that comes during an attempt is kept). A grant is only ever made under the advisory lock. The earliest waiter takes
 * the full path, which reaps the lapsed grants of the name.
 */
const BEHIND_A_WAITER = `     IF v_waiter IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM locking_waiters m WHERE m.waiter = v_waiter AND m.granted IS NOT NULL) THEN
       PERFORM 1 FROM locking_waiters w
        WHERE w.lock_name = v_name AND (v_mode = 'W' OR w.mode = 'W') AND w.expires > now() AND w.granted IS NULL
          AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter), ${NOT_WAITING})
          AND NOT EXISTS (SELECT 1 FROM locking_waiters g WHERE g.waiter = w.waiter AND g.lock_name <> v_name)
        LIMIT 1 FOR KEY SHARE OF w;
       IF FOUND THEN
${registerRefused('ARRAY[v_name]', 'ARRAY[v_mode]')}
         RETURN v_stamp;
       END IF;
     END IF;`;

/** `locking_wait_acquire_one`: the same for a batch of one group of one lock, with scalars (see BEHIND_A_WAITER). */
const WAIT_ACQUIRE_ONE_FUNCTION = `CREATE OR REPLACE FUNCTION locking_wait_acquire_one(p_app_id text, p_instance text, p_name text,
                                          p_mode text, p_waiter text, p_default_read integer, p_default_write integer,
                                          p_lease_ms integer, p_ttl_ms integer)
${Fragment.ONE_LOCK_CHECKED_CALL.replace('VOLATILE AS', `VOLATILE ${GENERIC_PLANS} AS`)}
${BEHIND_A_WAITER}
${Fragment.LOCK_ONE_NAME}
     IF v_waiter IS NOT NULL THEN
${claimHandedOver('ARRAY[v_name]')}
       IF v_stamp IS NOT NULL THEN
         RETURN v_stamp;
       END IF;
     END IF;
${CHECK_NAME_IN_ORDER}
     IF v_busy THEN
       IF v_waiter IS NOT NULL THEN
${registerRefused('ARRAY[v_name]', 'ARRAY[v_mode]')}
         RETURN v_stamp;
       END IF;
       RETURN 0;
     END IF;
     v_stamp := nextval('locking_stamp_seq');
     INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES (v_name, v_mode, p_app_id, v_stamp);
     INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
       VALUES (v_stamp, p_app_id, p_instance, ARRAY[v_name], ARRAY[v_mode]::char(1)[], 'ACQUIRED',
               now() + p_lease_ms * interval '1 millisecond');
${Fragment.DROP_WAITER_ROWS}
     RETURN v_stamp;
   END
   $fn$`;

/** `locking_reap` as the first migration created it (CREATE OR REPLACE), for `down`. */
const REAP_FUNCTION_V1 = CREATE_LOCK_SCHEMA.find((statement) => statement.includes('FUNCTION locking_reap('))!.replace(
  'CREATE FUNCTION',
  'CREATE OR REPLACE FUNCTION',
);

/** `locking_reap`, second version: the first's, and the waiter rows of a grant handed over go with it. */
const REAP_FUNCTION_V2 = REAP_FUNCTION_V1.replace(
  'PERFORM locking_notify_freed(v_freed);',
  'DELETE FROM locking_waiters WHERE granted = ANY (v_reaped);\n     PERFORM locking_notify_freed(v_freed);',
);

/** Installs the ninth schema version. */
export const UPGRADE_LOCK_SCHEMA_V9: readonly string[] = [
  ADD_HANDOVER_COLUMNS,
  CREATE_GRANTED_INDEX,
  REAP_LAPSED_FUNCTION,
  REAP_FUNCTION_V2,
  HAND_OVER_FUNCTION,
  WAIT_ACQUIRE_FUNCTION,
  WAIT_ACQUIRE_ONE_FUNCTION,
  RELEASE_FUNCTION_V4,
  RELEASE_ONE_FUNCTION_V4,
];

/** Puts the eighth version back: its functions first, then the columns and the new functions go. */
export const DOWNGRADE_LOCK_SCHEMA_V9: readonly string[] = [
  REAP_FUNCTION_V1,
  RELEASE_FUNCTION_V3,
  RELEASE_ONE_FUNCTION_V3,
  DROP_HANDOVER_COLUMNS,
  `DROP FUNCTION locking_wait_acquire(text, text, text[], text[], integer[], text[], integer, integer, integer, integer)`,
  `DROP FUNCTION locking_wait_acquire_one(text, text, text, text, text, integer, integer, integer, integer)`,
  `DROP FUNCTION locking_hand_over(text[], text)`,
  `DROP FUNCTION locking_reap_lapsed(text[])`,
];
