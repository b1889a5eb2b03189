/**
 * The third version of the MySQL and MariaDB acquisition procedures, created by the migration
 * `FairLockWaiters1796700000000` (issue 37): the second version's text (`mysql-lock.procedures-v2.sql.ts`), with every
 * waiter in one order. A request of either mode yields to the live waiter rows of its name registered before its
 * position (the smallest `seq` of its waiter's rows; a request that does not wait comes last): a write to every earlier
 * waiter, a read (as before) to the earlier waiting writers. Yielding goes only to a strictly earlier position, so
 * among waiters there is no cycle and the earliest waiter yields to nobody. `locking_release` is unchanged.
 * @internal
 */
import { acquisitionProcedures, CREATE_MYSQL_LOCK_PROCEDURES_V2, type OrderCheck, waiterSeq } from './mysql-lock.procedures-v2.sql.js';

/**
 * The order: busy while a live waiter of the name registered before `waiter` (of any mode for a write, a writer for
 * a read) could be served once the name is left to it: none of the other names of its group is held in a mode that
 * conflicts with its own (GRANTABLE_ONLY in `postgres-lock.schema-v7.sql.ts`: yielding to a waiter blocked elsewhere
 * stalls a caller that holds what it waits for). A request with no waiter for its name pays one indexed probe (the
 * primary key's `lock_name` prefix); the other names are looked at only when such a waiter is found.
 */
export const WAITERS_IN_ORDER: OrderCheck = (name, mode, waiter) => `IF v_busy = 0 THEN
        SELECT EXISTS (SELECT 1 FROM locking_waiters w
                        WHERE w.lock_name = ${name} AND (${mode} = 'W' OR w.mode = 'W')
                          AND w.expires > UTC_TIMESTAMP(6) AND w.seq < ${waiterSeq(waiter)}
                          AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                                           WHERE g.waiter = w.waiter AND g.lock_name <> ${name}
                                             AND g.expires > UTC_TIMESTAMP(6) AND (g.mode = 'W' OR l.mode = 'W'))) INTO v_busy;
      END IF`;

/** The three acquisition procedures, dropped (MySQL has no `CREATE OR REPLACE PROCEDURE`). */
export const DROP_ACQUISITION_PROCEDURES: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_try_acquire',
  'DROP PROCEDURE IF EXISTS locking_try_acquire_one',
  'DROP PROCEDURE IF EXISTS locking_try_acquire_batch',
];

/**
 * Installs the third version. Between a drop and its create, a grant finds the procedure missing and sends the same
 * decision as statements (`checkGroup`) for a moment.
 */
export const CREATE_MYSQL_LOCK_PROCEDURES_V3: readonly string[] = [
  ...DROP_ACQUISITION_PROCEDURES,
  ...acquisitionProcedures(WAITERS_IN_ORDER),
];

/** Puts the second version back (`down`). */
export const DROP_MYSQL_LOCK_PROCEDURES_V3: readonly string[] = [
  ...DROP_ACQUISITION_PROCEDURES,
  ...CREATE_MYSQL_LOCK_PROCEDURES_V2.filter((sql) => sql.startsWith('CREATE')),
];
