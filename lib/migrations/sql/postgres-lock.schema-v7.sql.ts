/**
 * The seventh schema version: every waiter in one order. The acquisition functions (`CREATE OR REPLACE`, same
 * signatures) let a request of either mode yield to the waiters registered before it: a writer to every earlier
 * waiter of the name, a reader (as before) to the earlier waiting writers. `down` restores the sixth version's
 * functions (the fourth version's one-lock twin). Safe while instances run: a call in flight finishes with the
 * version it started with.
 * @internal
 */
import { tryAcquireOneFunction, CHECK_PERMITS } from './postgres-lock.schema-v2.sql.js';
import { CHECK_NAME_ORDERED, NOT_WAITING } from './postgres-lock.schema-v4.sql.js';
import { groupBusy, TRY_ACQUIRE_FUNCTION_V6, tryAcquireFunctionV6 } from './postgres-lock.schema-v6.sql.js';

/*
 * WAITERS_IN_ORDER: a request yields to a live waiter row of its name registered before its position (the smallest
 * `seq` of its own rows; NOT_WAITING for a request that does not wait), of any mode for a write, of a writer for a
 * read (readers share). Yielding goes only to a strictly earlier position, so among waiters there is no cycle and the
 * earliest waiter yields to nobody: once nothing is held, its next attempt takes its group. The fourth version's
 * argument (ORDERED_WAITERS), now for writers too. A request with no waiter for its name costs one index probe more
 * (the primary key's `lock_name` prefix); the position is read only when such a row exists.
 *
 * GRANTABLE_ONLY: a request yields only to an earlier waiter that could be served once this name is left to it: none
 * of the other names of its group (its live rows) is held in a mode that conflicts with the waiter's (a write
 * conflicts with any holder, a read with a writer; the read permits are not counted). Yielding to a waiter blocked
 * elsewhere serves nobody, and stalls when the request's caller holds what that waiter waits for (it holds X and
 * waits for Y; an earlier waiter of [X, Y] waits for its X: before, both waited until one wait timed out). The
 * requested name itself is left out: a reader still yields to an earlier writer held off by the name's readers, so a
 * stream of readers cannot starve it. Checked only for an earlier waiter row found (index `locking_waiters_waiter_idx`).
 */

/** The order's condition for one name (`v_name`, `v_mode`, `v_waiter`). @internal */
export const waiterBefore = (name: string, mode: string): string => `EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = ${name}
                               AND (${mode} = 'W' OR w.mode = 'W') AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    ${NOT_WAITING})
                               AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                                WHERE g.waiter = w.waiter AND g.lock_name <> ${name} AND g.expires > now()
                                                  AND (g.mode = 'W' OR l.mode = 'W')))`;

/** The check of one name: the permits, then every waiter in registration order (see WAITERS_IN_ORDER). @internal */
export const CHECK_NAME_IN_ORDER = `${CHECK_PERMITS}         -- Waiters in registration order, writers included (see WAITERS_IN_ORDER).
         IF NOT v_busy THEN
           v_busy := ${waiterBefore('v_name', 'v_mode')};
         END IF;`;

/** `locking_try_acquire` (a batch of groups), seventh version. @internal */
export const TRY_ACQUIRE_FUNCTION_V7 = tryAcquireFunctionV6(CHECK_NAME_IN_ORDER, groupBusy(waiterBefore('r.name', 'r.mode')));

/** Installs the seventh schema version. */
export const UPGRADE_LOCK_SCHEMA_V7: readonly string[] = [TRY_ACQUIRE_FUNCTION_V7, tryAcquireOneFunction(CHECK_NAME_IN_ORDER)];

/** Puts the sixth version's batch function and the fourth version's one-lock twin back. */
export const DOWNGRADE_LOCK_SCHEMA_V7: readonly string[] = [TRY_ACQUIRE_FUNCTION_V6, tryAcquireOneFunction(CHECK_NAME_ORDERED)];
