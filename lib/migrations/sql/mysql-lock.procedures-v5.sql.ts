/**
 * The fifth version of the MySQL and MariaDB one-lock acquisition procedure (`locking_try_acquire_one`), created by the
 * migration `LockHandOver1797300000000` (issue 51: a hot name): the fourth version's, where a waiter's attempt is
 * refused on committed rows before it locks or writes its name's row (REFUSED_READS_ONLY in
 * `mysql-lock.procedures-v2.sql.ts`). Same signature, same decisions; an attempt without a waiter (the uncontended
 * call) is unchanged. `down` puts the fourth version back.
 * @internal
 */
import { createTryAcquireOne } from './mysql-lock.procedures-v2.sql.js';
import { WAITERS_IN_ORDER } from './mysql-lock.procedures-v3.sql.js';
import { COUNT_NAME_GRANT } from './mysql-lock.procedures-v4.sql.js';

const DROP_TRY_ACQUIRE_ONE = 'DROP PROCEDURE IF EXISTS locking_try_acquire_one';

/** Installs the fifth version of `locking_try_acquire_one`. */
export const CREATE_MYSQL_LOCK_PROCEDURES_V5: readonly string[] = [
  DROP_TRY_ACQUIRE_ONE,
  createTryAcquireOne(WAITERS_IN_ORDER, COUNT_NAME_GRANT, true),
];

/** Puts the fourth version of `locking_try_acquire_one` back (`down`). */
export const DROP_MYSQL_LOCK_PROCEDURES_V5: readonly string[] = [
  DROP_TRY_ACQUIRE_ONE,
  createTryAcquireOne(WAITERS_IN_ORDER, COUNT_NAME_GRANT),
];
