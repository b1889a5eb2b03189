import { LEADER_LOCK_PREFIX } from '../../leader/leader-role.util.js';
import { isoOf, LIVE, NOW } from './mysql-lock.queries.sql.js';

/**
 * The statements of leader election on MySQL and MariaDB (`locking_leaders`), parameterised (`?`). An election is
 * one transaction: `TAKE_LIVE_GRANT`, `UPSERT_TERM`, `SELECT_TERM`.
 * @internal
 */

/**
 * ? stamp, ? app id, ? the role's lock name, ? stamp: writes the grant's log row (one row changed) when the grant is
 * live (ACQUIRED or BUSINESS_DONE, its lease not over) and no other grant holds the role's lock (a permits row giving
 * it more than one writer). A write, not a read: the reaper and a forced release end the grant by writing that row, so
 * on a Galera cluster (where only written rows are certified, and row locks hold on one node) an election and the end
 * of its grant on another node conflict, and the one certified second is run again.
 */
export const TAKE_LIVE_GRANT = `UPDATE locking_log SET version = version + 1
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

/** `leader:`, and where the role begins in a role's lock name (1-based). */
const PREFIX = `'${LEADER_LOCK_PREFIX}'`;
const ROLE_AT = LEADER_LOCK_PREFIX.length + 1;

/**
 * ? role ×2, ? role ×2 (null: every role) → one row per role and candidate (`LeaderRow`), ordered by role and waiting
 * order: the roles of `locking_leaders` and those whose lock has candidates waiting; the leader while the latest
 * winner's grant holds the role's lock with a lease not over (database clock); the candidates in `seq` order.
 */
export const SELECT_LEADERS = `SELECT r.role, t.term, t.stamp, t.app_id, t.instance, ${isoOf('t.elected')} AS elected,
       l.stamp IS NOT NULL AS term_live,
       TIMESTAMPDIFF(MICROSECOND, ${NOW}, l.lease_expires) / 1000 AS lease_left_ms,
       w.waiter AS candidate, w.app_id AS candidate_app_id,
       TIMESTAMPDIFF(MICROSECOND, w.registered, ${NOW}) / 1000 AS waiting_for_ms
  FROM (SELECT role FROM locking_leaders WHERE ? IS NULL OR role = ?
        UNION
        SELECT SUBSTRING(lock_name, ${ROLE_AT}) FROM locking_waiters
         WHERE LEFT(lock_name, ${ROLE_AT - 1}) = ${PREFIX} AND expires > ${NOW}
           AND (? IS NULL OR lock_name = CONCAT(${PREFIX}, ?))) r
  LEFT JOIN locking_leaders t ON t.role = r.role
  LEFT JOIN locking_log l ON l.stamp = t.stamp AND l.status IN ${LIVE} AND l.lease_expires > ${NOW}
        AND EXISTS (SELECT 1 FROM locking k WHERE k.stamp = t.stamp AND k.lock_name = CONCAT(${PREFIX}, r.role))
  LEFT JOIN locking_waiters w ON w.lock_name = CONCAT(${PREFIX}, r.role) AND w.expires > ${NOW}
 ORDER BY r.role, w.seq`;
