/**
 * The fifth version of the MySQL and MariaDB acquisition procedures, created by the migration
 * `LockHandOver1797300000000` (issue 51: a hot name), after the hand-over's columns (`mysql-lock-hand-over.sql.ts`):
 * the fourth version's text, where
 * - a waiter's attempt on one lock is refused on committed rows before it locks or writes its name's row
 *   (REFUSED_READS_ONLY in `mysql-lock.procedures-v2.sql.ts`; an attempt without a waiter, the uncontended call, is
 *   unchanged);
 * - a waiter that a release has handed a grant is refused (`HANDED_WAITS`).
 * `down` puts the fourth version back.
 * @internal
 */
import { acquisitionProcedures, type OrderCheck } from './mysql-lock.procedures-v2.sql.js';
import { DROP_ACQUISITION_PROCEDURES, WAITERS_IN_ORDER } from './mysql-lock.procedures-v3.sql.js';
import { COUNT_NAME_GRANT } from './mysql-lock.procedures-v4.sql.js';

/**
 * HANDED_WAITS: the order of the third version, and then a waiter whose rows a release has marked `granted` is busy.
 * The grant handed to it is its own, told by the release or the listener's poll; an attempt of its own could
 * otherwise take a second permit of the name beside it (a name whose writers have several), and the wait, answered
 * with that one, would leave the grant handed over to nobody until its short lease ends. One probe of the waiters'
 * `waiter` index, made only when nothing else refused.
 */
const HANDED_WAITS: OrderCheck = (name, mode, waiter) => `${WAITERS_IN_ORDER(name, mode, waiter)};
      IF v_busy = 0 AND ${waiter} IS NOT NULL THEN
        SELECT EXISTS (SELECT 1 FROM locking_waiters h WHERE h.waiter = ${waiter} AND h.granted IS NOT NULL) INTO v_busy;
      END IF`;

/** Installs the fifth version. */
export const CREATE_MYSQL_LOCK_PROCEDURES_V5: readonly string[] = [
  ...DROP_ACQUISITION_PROCEDURES,
  ...acquisitionProcedures(HANDED_WAITS, COUNT_NAME_GRANT, true),
];

/** Puts the fourth version back (`down`). */
export const DROP_MYSQL_LOCK_PROCEDURES_V5: readonly string[] = [
  ...DROP_ACQUISITION_PROCEDURES,
  ...acquisitionProcedures(WAITERS_IN_ORDER, COUNT_NAME_GRANT),
];
