/**
 * Statements of the reports and admin actions on MySQL and MariaDB, parameterised (`?`). They act on every app's rows,
 * never on behalf of one. Times leave the database as ISO 8601 strings in UTC, and ages are computed by it.
 * @internal
 */
import { isoOf, LIVE, NOW } from './mysql-lock.queries.sql.js';

/** The log columns every report reads. */
const LOG_COLUMNS = `l.stamp, l.app_id, l.instance, l.lock_names, l.lock_modes, ${isoOf('l.acquired')} AS acquired`;

/** ? name, ? name, ? app id, ? app id (each filter ignored when null) → the grants holding locks now, oldest first. */
export const SELECT_GRANTS = `SELECT ${LOG_COLUMNS},
    TIMESTAMPDIFF(MICROSECOND, l.acquired, ${NOW}) / 1000 AS held_for_ms,
    TIMESTAMPDIFF(MICROSECOND, ${NOW}, l.lease_expires) / 1000 AS lease_left_ms
  FROM locking_log l
 WHERE l.stamp IN (SELECT k.stamp FROM locking k
                    WHERE (? IS NULL OR k.lock_name = ?) AND (? IS NULL OR k.app_id = ?))
 ORDER BY l.stamp`;

/**
 * ? since ×3 (a UTC `DATETIME`), ? name ×2, ? stamp ×2 (each filter ignored when null), ? limit → the newest log rows.
 */
export const SELECT_LOG = `SELECT ${LOG_COLUMNS}, l.status, ${isoOf('l.business_done')} AS business_done,
    ${isoOf('l.ended')} AS ended, l.ended_by, l.end_reason
  FROM locking_log l
 WHERE (? IS NULL OR l.acquired >= ? OR l.ended >= ?)
   AND (? IS NULL OR JSON_CONTAINS(l.lock_names, JSON_QUOTE(?)))
   AND (? IS NULL OR l.stamp = ?)
 ORDER BY l.stamp DESC LIMIT ?`;

/** The waiter rows whose registration has not expired, in waiting order, with their ages. */
export const SELECT_WAITER_ROWS = `SELECT waiter, app_id, lock_name, mode, seq,
    TIMESTAMPDIFF(MICROSECOND, registered, ${NOW}) / 1000 AS waiting_for_ms,
    TIMESTAMPDIFF(MICROSECOND, ${NOW}, expires) / 1000 AS expires_in_ms
  FROM locking_waiters
 WHERE expires > ${NOW}
 ORDER BY seq, lock_name`;

/** ? stamp → the live grant to force, locked until the transaction ends (no row when none is live). */
export const SELECT_LIVE_GRANT = `SELECT app_id, instance, lock_names, lock_modes FROM locking_log
  WHERE stamp = ? AND status IN ${LIVE} FOR UPDATE`;

/** ? actor, ? reason, ? stamp: ends the grant as FORCED. */
export const END_GRANT_FORCED = `UPDATE locking_log
  SET status = 'FORCED', ended = ${NOW}, ended_by = ?, end_reason = ?, version = version + 1
  WHERE stamp = ?`;

/** ? stamp → how long the ended grant was held. */
export const SELECT_HELD_FOR = `SELECT TIMESTAMPDIFF(MICROSECOND, acquired, ended) / 1000 AS held_for_ms
  FROM locking_log WHERE stamp = ?`;

/** ? migrations table name → whether it exists, and how many of the four lock tables exist, in the current database. */
export const SELECT_TABLES_PRESENT = `SELECT
    (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?) AS migrations_table,
    (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()
       AND TABLE_NAME IN ('locking', 'locking_log', 'locking_permissions', 'locking_waiters')) AS lock_tables`;

/** The names recorded in TypeORM's migrations table `table` (an identifier quoted by the caller), in order. */
export const selectMigrationNames = (table: string): string => `SELECT name FROM ${table} ORDER BY id`;

/**
 * Every table prefix of the current database that has the core lock tables (`locking`, `locking_log`,
 * `locking_permissions`), '' for the default place. Looks across places: never rewritten by `inLockTables`. Used by
 * the command line to say where the lock tables are when the chosen place has none.
 */
export const SELECT_LOCK_PLACES = `SELECT LEFT(t.TABLE_NAME, CHAR_LENGTH(t.TABLE_NAME) - 7) AS place
  FROM information_schema.TABLES t
 WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME LIKE '%locking'
   AND EXISTS (SELECT 1 FROM information_schema.TABLES l WHERE l.TABLE_SCHEMA = DATABASE()
                  AND l.TABLE_NAME = CONCAT(LEFT(t.TABLE_NAME, CHAR_LENGTH(t.TABLE_NAME) - 7), 'locking_log'))
   AND EXISTS (SELECT 1 FROM information_schema.TABLES p WHERE p.TABLE_SCHEMA = DATABASE()
                  AND p.TABLE_NAME = CONCAT(LEFT(t.TABLE_NAME, CHAR_LENGTH(t.TABLE_NAME) - 7), 'locking_permissions'))
 ORDER BY place`;
