/**
 * The sixth schema version: a group is checked in one statement. `locking_try_acquire` (`CREATE OR REPLACE`, same
 * signature) takes a batch's advisory locks in one statement instead of one per name, and decides a group of several
 * locks with one set-based query over its names instead of a loop of queries per name; a group of one lock keeps the
 * per-name check of the fourth version (its cheapest form). The decision is the fourth version's, name for name: a
 * held name is busy when its holders reach its permits in the asked mode or hold the other mode (permits read in the
 * statement), and a reader yields to a writer that registered before it. `down` restores the fourth version's
 * function. Safe while instances run: a call in flight finishes with the version it started with.
 * @internal
 */
import * as Fragment from './postgres-lock.fragments.sql.js';
import { CHECK_NAME_ORDERED, NOT_WAITING } from './postgres-lock.schema-v4.sql.js';
import { tryAcquireFunction } from './postgres-lock.schema-v2.sql.js';

/**
 * Whether any lock of the group `p_names[v_from:v_to]` is busy for the group of `v_waiter`: CHECK_NAME_ORDERED as
 * one query. The permits are looked up only for held names, and the waiter's position only when a waiting writer of
 * one of its names exists (a scalar subquery that depends on no name is computed once, on first use). `yields` is
 * the order's condition on a request `r`, and `held` whether `r.name` has a lock row (later versions pass their own).
 * @internal
 */
export const groupBusy = (yields: string, held = HELD_BY_EXISTS): string => `SELECT 1
           FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode)
          WHERE (${held}
                 AND (SELECT count(*) FILTER (WHERE h.mode = r.mode) >= min(h.permits)
                             OR count(*) FILTER (WHERE h.mode <> r.mode) > 0
                        FROM (SELECT held.mode, lim.permits
                                FROM (SELECT coalesce((SELECT p.permits FROM locking_permissions p
                                                        WHERE p.lock_name = r.name AND p.mode = r.mode),
                                                      CASE r.mode WHEN 'W' THEN p_default_write ELSE p_default_read END
                                                     )::bigint AS permits) AS lim
                                CROSS JOIN LATERAL (SELECT l.mode FROM locking l WHERE l.lock_name = r.name
                                                     LIMIT lim.permits + 1) AS held) AS h))
             OR ${yields}`;

/** Whether the request `r`'s name has a lock row, as the sixth and seventh versions ask it. */
const HELD_BY_EXISTS = 'EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = r.name)';

/** The fourth version's order in GROUP_BUSY: a reader yields to the waiting writers registered before it. */
const READERS_YIELD = `(r.mode = 'R'
                 AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = r.name AND w.mode = 'W'
                               AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    ${NOT_WAITING})))`;

/*
 * GENERIC_PLANS: PL/pgSQL plans a statement with its parameters' values for its first five runs, then keeps a generic
 * plan only if the planner estimates it no dearer than those. For GROUP_BUSY it never does (the generic plan guesses
 * ten names for the unnest), so every call planned the query again: about 0.4 ms of planning, half the contended
 * workload's throughput. Its plan does not depend on the values (index probes per name whatever the count), so a call
 * with several names asks for generic plans for the rest of its transaction (the call is the transaction: the hot
 * path runs it in autocommit).
 */

/**
 * `locking_try_acquire`, sixth version, with the check of one name `checkName` and the group check `groupCheck` (the
 * sixth version's are CHECK_NAME_ORDERED and `groupBusy(READERS_YIELD)`; a later version passes its own).
 * @internal
 */
export const tryAcquireFunctionV6 = (checkName: string, groupCheck: string): string => `CREATE OR REPLACE FUNCTION ${Fragment.TRY_ACQUIRE_SIGNATURE}
${Fragment.BATCH_CALL_THEN_EACH_GROUP}
       IF v_from = v_to THEN
         v_name := p_names[v_from];
         v_mode := p_modes[v_from];
${checkName}
       ELSE
         v_busy := EXISTS (${groupCheck});
       END IF;
       IF v_busy THEN
         v_stamps := v_stamps || 0::bigint;
       ELSE
         v_stamp := nextval('locking_stamp_seq');
         IF v_from = v_to THEN
           INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES (v_name, v_mode, p_app_id, v_stamp);
         ELSE
           INSERT INTO locking (lock_name, mode, app_id, stamp)
             SELECT r.name, r.mode, p_app_id, v_stamp FROM unnest(p_names[v_from:v_to], p_modes[v_from:v_to]) AS r(name, mode);
         END IF;
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
           VALUES (v_stamp, p_app_id, p_instance, p_names[v_from:v_to], p_modes[v_from:v_to]::char(1)[], 'ACQUIRED',
                   now() + p_lease_ms * interval '1 millisecond');
${Fragment.RECORD_GRANT_AND_NEXT_GROUP}`;

/** `locking_try_acquire`, sixth version. @internal */
export const TRY_ACQUIRE_FUNCTION_V6 = tryAcquireFunctionV6(CHECK_NAME_ORDERED, groupBusy(READERS_YIELD));

/** Installs the sixth schema version. */
export const UPGRADE_LOCK_SCHEMA_V6: readonly string[] = [TRY_ACQUIRE_FUNCTION_V6];

/** Puts the fourth version's acquisition function back (the fifth did not change it). */
export const DOWNGRADE_LOCK_SCHEMA_V6: readonly string[] = [tryAcquireFunction(CHECK_NAME_ORDERED)];
