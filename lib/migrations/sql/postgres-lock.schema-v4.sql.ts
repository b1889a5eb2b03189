/**
 * The fourth schema version: waiters in a total order. `locking_waiters` gets a registration sequence (`seq`), and
 * the acquisition functions (`CREATE OR REPLACE`, same signatures) let a reader yield only to the waiting writers that
 * registered before it, so waiting writers can never hold each other off in a cycle. `down` restores the second
 * version's functions and drops the column.
 * @internal
 */
import {
  CHECK_PERMITS,
  TRY_ACQUIRE_FUNCTION_V2,
  TRY_ACQUIRE_ONE_FUNCTION_V2,
  tryAcquireFunction,
  tryAcquireOneFunction,
} from './postgres-lock.schema-v2.sql.js';

/** Largest bigint: the position of a request that does not wait (behind every waiter). @internal */
export const NOT_WAITING = '9223372036854775807';

/*
 * ORDERED_WAITERS: every waiter row takes the next value of `locking_waiter_seq` when it is inserted (a refresh keeps
 * it), and a waiter's position is the smallest `seq` of its rows. A reader yields to a waiting writer of the name only
 * when one of that writer's rows is older than the reader's position; a request that does not wait has the position
 * NOT_WAITING and yields to every waiting writer, as before. For two waiters A before B (min A < min B), every row of
 * B is at least min B > min A, so A never yields to B: yielding follows the order, there is no cycle, and the
 * earliest waiter yields to nobody. When nothing is held, its group is free and its next attempt takes it.
 *
 * The position is read only when a waiting writer of the name exists (the InitPlan runs on first use): the common
 * call, with no waiter, costs what it cost in the second version.
 */
export const CHECK_NAME_ORDERED = `${CHECK_PERMITS}         -- Writer preference in registration order (see ORDERED_WAITERS).
         IF NOT v_busy AND v_mode = 'R' THEN
           v_busy := EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = v_name AND w.mode = 'W'
                               AND w.expires > now()
                               AND w.seq < coalesce((SELECT min(o.seq) FROM locking_waiters o WHERE o.waiter = v_waiter),
                                                    ${NOT_WAITING}));
         END IF;`;

/** Installs the fourth schema version. */
export const UPGRADE_LOCK_SCHEMA_V4: readonly string[] = [
  `CREATE SEQUENCE locking_waiter_seq AS bigint`,
  // A column default, so that a registration statement need not name it (instances of an older version keep working).
  `ALTER TABLE locking_waiters ADD COLUMN seq bigint NOT NULL DEFAULT nextval('locking_waiter_seq')`,
  `ALTER SEQUENCE locking_waiter_seq OWNED BY locking_waiters.seq`,
  tryAcquireFunction(CHECK_NAME_ORDERED),
  tryAcquireOneFunction(CHECK_NAME_ORDERED),
];

/** Puts the second version's functions back and drops the order. */
export const DOWNGRADE_LOCK_SCHEMA_V4: readonly string[] = [
  TRY_ACQUIRE_FUNCTION_V2,
  TRY_ACQUIRE_ONE_FUNCTION_V2,
  `ALTER TABLE locking_waiters DROP COLUMN IF EXISTS seq`,
  `DROP SEQUENCE IF EXISTS locking_waiter_seq`,
];
