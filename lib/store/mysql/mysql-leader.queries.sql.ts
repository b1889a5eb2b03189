import { LIVE, NOW } from './mysql-lock.queries.sql.js';

/**
 * The statements of leader election on MySQL and MariaDB (`locking_leaders`), parameterised (`?`). An election is
 * one transaction: `SELECT_LIVE_GRANT`, `UPSERT_TERM`, `SELECT_TERM`.
 * @internal
 */

/**
 * ? stamp, ? app id, ? the role's lock name, ? stamp: a row when the grant is live (ACQUIRED or BUSINESS_DONE, its lease
 * not over) and no other grant holds the role's lock (a permits row giving it more than one writer).
 */
export const SELECT_LIVE_GRANT = `SELECT 1 AS live FROM locking_log
  WHERE stamp = ? AND app_id = ? AND status IN ${LIVE} AND lease_expires > ${NOW}
    AND NOT EXISTS (SELECT 1 FROM locking k WHERE k.lock_name = ? AND k.stamp <> ?)`;

/**
 * ? role, ? stamp, ? app id, ? instance: one more term for the role, unless a grant with a larger stamp won it (then
 * nothing changes); the same term again under the same stamp. The row's exclusive lock serialises the elections of a
 * role. Assignments run left to right: `stamp` last, so the others compare with the previous winner's.
 */
export const UPSERT_TERM = `INSERT INTO locking_leaders (role, term, stamp, app_id, instance, elected)
VALUES (?, 1, ?, ?, ?, ${NOW})
ON DUPLICATE KEY UPDATE
  term = IF(stamp < VALUES(stamp), term + 1, term),
  elected = IF(stamp < VALUES(stamp), VALUES(elected), elected),
  app_id = IF(stamp <= VALUES(stamp), VALUES(app_id), app_id),
  instance = IF(stamp <= VALUES(stamp), VALUES(instance), instance),
  stamp = GREATEST(stamp, VALUES(stamp))`;

/** ? role: the role's term, the stamp that won it, and when (epoch ms). */
export const SELECT_TERM = `SELECT term, stamp, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', elected) / 1000 AS elected_ms
  FROM locking_leaders WHERE role = ?`;
