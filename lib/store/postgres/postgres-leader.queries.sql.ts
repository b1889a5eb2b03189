import { LEADER_LOCK_PREFIX } from '../../leader/leader-role.util.js';
import { LIVE } from '../lock-sql.constants.js';
import { DURABLE_COMMIT } from './postgres-lock.queries.sql.js';

/**
 * The statements of leader election on PostgreSQL (`locking_leaders`), parameterised.
 * @internal
 */

/**
 * $1 role, $2 stamp, $3 app id, $4 instance, $5 the role's lock name: one more term for the role, won by the grant `$2`,
 * if that grant is live (its log row ACQUIRED or BUSINESS_DONE, its lease not over), no other grant holds the role's
 * lock (a permits row giving it more than one writer), and no grant with a larger stamp has won the role. The
 * ON CONFLICT clause re-reads the role's latest row (READ COMMITTED), so two elections of one role are serialised on
 * its row and a stale one updates nothing. Again under the same stamp, it returns the same term. No row: not elected.
 * Its commit waits for the WAL flush (and a synchronous standby) even on a session with `synchronous_commit = off`: a
 * term lost in a crash or a failover would be handed out again, the fencing token going back under a leader that holds it.
 */
export const ELECT_LEADER = `INSERT INTO locking_leaders AS t (role, term, stamp, app_id, instance, elected)
SELECT $1::varchar, 1, $2::bigint, $3::varchar, $4::varchar, clock_timestamp()
 WHERE EXISTS (SELECT 1 FROM locking_log l
                WHERE l.stamp = $2::bigint AND l.app_id = $3::varchar AND l.status IN ${LIVE} AND l.lease_expires > clock_timestamp())
   AND NOT EXISTS (SELECT 1 FROM locking k WHERE k.lock_name = $5::varchar AND k.stamp <> $2::bigint)
ON CONFLICT (role) DO UPDATE SET
  term = CASE WHEN t.stamp < excluded.stamp THEN t.term + 1 ELSE t.term END,
  elected = CASE WHEN t.stamp < excluded.stamp THEN excluded.elected ELSE t.elected END,
  stamp = excluded.stamp, app_id = excluded.app_id, instance = excluded.instance
 WHERE t.stamp <= excluded.stamp
RETURNING t.term::text AS term, (extract(epoch FROM t.elected) * 1000)::float8 AS elected_ms, ${DURABLE_COMMIT}`;

/** `leader:`, and where the role begins in a role's lock name (1-based). */
const PREFIX = `'${LEADER_LOCK_PREFIX}'`;
const ROLE_AT = LEADER_LOCK_PREFIX.length + 1;

/**
 * $1 a role (null: every role) → one row per role and candidate (`LeaderRow`), ordered by role and waiting order. The
 * roles: those of `locking_leaders` and those whose lock has candidates waiting (never won yet). The leader: the
 * role's latest winner while its grant holds the role's lock with a lease not over (database clock). The candidates:
 * the waiters for the role's lock whose registration has not expired, in the order of their `seq`.
 */
export const SELECT_LEADERS = `WITH roles AS (
  SELECT role FROM locking_leaders WHERE $1::varchar IS NULL OR role = $1::varchar
  UNION
  SELECT substr(lock_name, ${ROLE_AT}) FROM locking_waiters
   WHERE left(lock_name, ${ROLE_AT - 1}) = ${PREFIX} AND expires > clock_timestamp()
     AND ($1::varchar IS NULL OR lock_name = ${PREFIX} || $1::varchar)
)
SELECT r.role, t.term::text AS term, t.stamp::text AS stamp, t.app_id, t.instance, t.elected,
       l.stamp IS NOT NULL AS term_live,
       (extract(epoch FROM l.lease_expires - clock_timestamp()) * 1000)::float8 AS lease_left_ms,
       w.waiter AS candidate, w.app_id AS candidate_app_id,
       (extract(epoch FROM clock_timestamp() - w.registered) * 1000)::float8 AS waiting_for_ms
  FROM roles r
  LEFT JOIN locking_leaders t ON t.role = r.role
  LEFT JOIN locking_log l ON l.stamp = t.stamp AND l.status IN ${LIVE} AND l.lease_expires > clock_timestamp()
        AND EXISTS (SELECT 1 FROM locking k WHERE k.stamp = t.stamp AND k.lock_name = ${PREFIX} || r.role)
  LEFT JOIN locking_waiters w ON w.lock_name = ${PREFIX} || r.role AND w.expires > clock_timestamp()
 ORDER BY r.role, w.seq`;
