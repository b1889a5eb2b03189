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
