/**
 * The statements of the running lock engine on PostgreSQL, parameterised. The schema and the functions they call are
 * in `lib/migrations/sql/`.
 * @internal
 */
import { LIVE } from '../lock-sql.constants.js';

/**
 * The first character of a hand-over's notification (`chr(1)`, then the waiter id and the stamp, space-separated:
 * `locking_hand_over`); a notification of freed names never starts with it (a lock name has no control character).
 */
export const HANDOVER_MARK = '\u0001';

/** Namespace (first key) of the session advisory lock an instance holds on its `appId` while it lives. */
export const INSTANCE_NAMESPACE = 1_819_240_297; // 'lock' + 1022

/**
 * A column that makes the statement's own commit wait for the WAL flush even when the session runs with
 * `synchronous_commit = off` (an application may set it for speed): a grant or a renewal lost in a server crash would
 * let another instance take a lock its holder still believes it holds. Stronger settings (`remote_apply`, …) stay.
 * @internal
 */
export const DURABLE_COMMIT = `CASE WHEN current_setting('synchronous_commit') = 'off'
  THEN set_config('synchronous_commit', 'on', true) END AS durable`;

/**
 * A column that lets the statement's commit skip the WAL flush. Only for rows that are soft state: waiter rows, which
 * a crash may lose (their waiter registers them again at its next refresh, and re-checks on its timer meanwhile). A
 * grant handed over to them commits durably, and a durable commit flushes every record written before it, the rows'
 * included.
 */
const QUICK_COMMIT = `set_config('synchronous_commit', 'off', true) AS quick`;

/** $1 app id, $2 instance, $3 names, $4 modes ('R'/'W') of all groups in a row, $5 the (1-based, inclusive) end of
 * each group in them, $6 the waiter id of each group (null when not waiting), $7 default read permits, $8 default
 * write permits, $9 lease (ms) → one stamp (or 0) per group. */
export const TRY_ACQUIRE_GROUPS = `SELECT locking_try_acquire($1, $2, $3::text[], $4::text[], $5::integer[], $6::text[],
  $7, $8, $9) AS stamps, ${DURABLE_COMMIT}`;

/** The same for a batch of one group of one lock: $1 app id, $2 instance, $3 name, $4 mode ('R'/'W'), $5 waiter id
 * (or null), $6 default read permits, $7 default write permits, $8 lease (ms) → the stamp, or 0. */
export const TRY_ACQUIRE_ONE = `SELECT locking_try_acquire_one($1, $2, $3, $4, $5, $6, $7, $8) AS stamp, ${DURABLE_COMMIT}`;

/**
 * A waiter's attempt (`locking_wait_acquire`, WAIT_IN_ONE_ROUND_TRIP): TRY_ACQUIRE_GROUPS's parameters, then $10 the
 * waiters' time to live (ms) → one stamp (or 0) per group; a refused waiter's rows are registered or refreshed, and
 * its group answers minus their end (epoch ms: HANDED_OVER_LEASE). Its
 * commit waits for the disk when it granted something (DURABLE_COMMIT), not when it only wrote waiter rows.
 */
export const WAIT_ACQUIRE_GROUPS = `SELECT w.stamps, CASE WHEN 0 < ANY (w.stamps) AND current_setting('synchronous_commit') = 'off'
    THEN set_config('synchronous_commit', 'on', true) END AS durable
  FROM locking_wait_acquire($1, $2, $3::text[], $4::text[], $5::integer[], $6::text[], $7, $8, $9, $10) AS w(stamps)`;

/** The same for a batch of one group of one lock: TRY_ACQUIRE_ONE's parameters, then $9 the time to live (ms). */
export const WAIT_ACQUIRE_ONE = `SELECT w.stamp, CASE WHEN w.stamp > 0 AND current_setting('synchronous_commit') = 'off'
    THEN set_config('synchronous_commit', 'on', true) END AS durable
  FROM locking_wait_acquire_one($1, $2, $3, $4, $5, $6, $7, $8, $9) AS w(stamp)`;

/**
 * $1 waiter, $2 app id, $3 names, $4 modes, $5 time to live (ms): registers or refreshes a waiter's rows, as an
 * instance that cannot take a hand-over (a schema before `LockHandOver1797300000000`).
 */
export const REGISTER_WAITER = `INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires)
  SELECT n, $1, m, $2, now() + $5 * interval '1 millisecond' FROM unnest($3::text[], $4::text[]) AS t(n, m)
  ON CONFLICT (lock_name, waiter) DO UPDATE SET expires = EXCLUDED.expires`;

/**
 * The same, with what a release needs to hand the waiter a grant (committed without waiting for the disk:
 * QUICK_COMMIT): $6 instance, $7 default read permits, $8 default
 * write permits, $9 the lease a grant starts with (ms) → `refreshed`, the rows inserted or extended. Rows already
 * handed a grant are left as they are (0 refreshed): their `expires` became the grant's lease end, which a refresh
 * sent later must not seem to extend (the holder counts that lease from the last refresh the database answered).
 */
export const REGISTER_HANDOVER_WAITER = `WITH up AS (
    INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, instance, default_read, default_write, lease_ms,
                                 handover)
    SELECT n, $1, m, $2, now() + $5 * interval '1 millisecond', $6, $7, $8, $9, true
      FROM unnest($3::text[], $4::text[]) AS t(n, m)
    ON CONFLICT (lock_name, waiter) DO UPDATE SET expires = EXCLUDED.expires WHERE locking_waiters.granted IS NULL
    RETURNING 1)
  SELECT count(*)::int AS refreshed, ${QUICK_COMMIT} FROM up`;

/** $1 waiter: removes its rows (it gave up, or was aborted). A writer that leaves may let readers that yielded to
 * it in: its names are notified (to whoever still waits for them). */
export const UNREGISTER_WAITER = `WITH gone AS (DELETE FROM locking_waiters WHERE waiter = $1 RETURNING lock_name, mode)
  SELECT locking_notify_freed(coalesce(array_agg(lock_name::text) FILTER (WHERE mode = 'W'), '{}')) FROM gone`;

/** The same, and → `granted`, the stamp a release handed the waiter meanwhile (null when none). */
export const UNREGISTER_HANDOVER_WAITER = `WITH gone AS (
    DELETE FROM locking_waiters WHERE waiter = $1 RETURNING lock_name, mode, granted)
  SELECT locking_notify_freed(coalesce(array_agg(lock_name::text) FILTER (WHERE mode = 'W' AND granted IS NULL), '{}')),
         max(granted) AS granted
    FROM gone`;

/** $1 waiter → whether it still has rows (a grant removes them in its own commit). */
export const SELECT_WAITER_REGISTERED = `SELECT EXISTS (SELECT 1 FROM locking_waiters WHERE waiter = $1) AS waiting`;

/** $1 app id, $2 stamps, $3 async commit → the stamps that matched. */
export const RELEASE_GROUPS = `SELECT locking_release($1, $2::bigint[], $3) AS released`;

/** The same for one stamp: $1 app id, $2 stamp, $3 async commit → whether it matched. */
export const RELEASE_ONE = `SELECT locking_release_one($1, $2, $3) AS released`;

/**
 * $1 app id, $2 stamps, $3 lease (ms), $4 max hold (ms, 0 = none) → `renewed`, the stamps whose lease was extended (to
 * $3 ms from now, but never past $4 ms after the grant's acquisition), and `live`, those still held with a lease that
 * has not ended (a superset). A row locked by another transaction (a business transaction after markBusinessDone, a
 * release or a reap in progress) is skipped, never waited for: one long business transaction must not hold up the
 * renewal of the instance's other grants. A lease that has ended is never revived: its holder has been told it is
 * lost, and any reaper may free it.
 */
export const RENEW_LEASES = `WITH live AS (
    SELECT stamp FROM locking_log
     WHERE stamp = ANY ($2::bigint[]) AND app_id = $1 AND status IN ${LIVE} AND lease_expires > now()),
  unlocked AS (
    SELECT stamp FROM locking_log
     WHERE stamp = ANY ($2::bigint[]) AND app_id = $1 AND status IN ${LIVE} AND lease_expires > now()
     FOR UPDATE SKIP LOCKED),
  renewed AS (
    UPDATE locking_log l SET version = l.version + 1,
           lease_expires = CASE WHEN $4 > 0
             THEN least(now() + $3 * interval '1 millisecond', l.acquired + $4 * interval '1 millisecond')
             ELSE now() + $3 * interval '1 millisecond' END
      FROM unlocked u WHERE l.stamp = u.stamp
    RETURNING l.stamp)
  SELECT (SELECT coalesce(array_agg(stamp), '{}') FROM renewed) AS renewed,
         (SELECT coalesce(array_agg(stamp), '{}') FROM live) AS live,
         ${DURABLE_COMMIT}`;

/**
 * $1 batch size, $2 max hold (ms, 0 = none) → the stamps reaped. The store passes 0: a grant's max hold is its holder's
 * own, applied by capping its lease at renewal, so that the holder is told first (another instance's limit it cannot know).
 */
export const REAP_STALE = `SELECT locking_reap($1, $2) AS reaped`;

/** $1 app id → lock rows freed; the app's live grants become RECOVERED. */
export const RECOVER_APP = `SELECT locking_recover($1) AS freed`;

/** $1 age (ms), $2 batch size: deletes ended log rows older than the age (found through the BRIN on `acquired`).
 * SKIP LOCKED: instances pruning at the same moment split the old rows between them instead of queueing on the same
 * ones. */
export const PRUNE_LOG = `DELETE FROM locking_log WHERE stamp IN (
  SELECT stamp FROM locking_log
   WHERE acquired < now() - $1 * interval '1 millisecond' AND ended < now() - $1 * interval '1 millisecond'
   LIMIT $2
   FOR UPDATE SKIP LOCKED)`;

/** The isolation levels at which a statement sees the newest committed row versions (PostgreSQL runs READ UNCOMMITTED
 * as READ COMMITTED). */
const SEES_NEWEST = `current_setting('transaction_isolation') IN ('read committed', 'read uncommitted')`;

/**
 * $1 stamp, $2 app id: → BUSINESS_DONE, only while the grant is live, exists and its lease has not expired (a grant
 * already BUSINESS_DONE is fenced again by a later transaction that relies on it), and only at READ COMMITTED (see
 * HOLD_GRANT_ROWS for the levels above). Run inside the caller's transaction, as its last statement; clock_timestamp(),
 * not now(): the transaction may have started long ago. The row lock holds off the reaper, releases and forced
 * releases until the transaction ends.
 */
export const MARK_BUSINESS_DONE = `UPDATE locking_log
  SET status = 'BUSINESS_DONE', business_done = clock_timestamp(), version = version + 1
  WHERE ${SEES_NEWEST} AND stamp = $1 AND app_id = $2 AND status IN ${LIVE} AND lease_expires > clock_timestamp()
    AND EXISTS (SELECT 1 FROM locking WHERE stamp = $1)`;

/**
 * $1 stamp, $2 app id → `held`, the grant's lock rows now locked by the caller's transaction: the fence at REPEATABLE
 * READ and SERIALIZABLE (none at READ COMMITTED, where MARK_BUSINESS_DONE is). There the log row is left alone: a
 * renewal commits an update of it every `renewIntervalMs`, and updating a row changed since the snapshot fails with
 * 40001 however live the grant is. The lock rows are never updated, only deleted when the grant ends, and every way of
 * ending a grant (release, reaper, recovery, forced release) deletes them: the lock (FOR KEY SHARE) holds off the end
 * until the commit. Rows deleted after the snapshot fail the lock with 40001 (the grant ended meanwhile), rows deleted
 * before it are not found. The lease is the holder's to check (its watchdog ends before the database's lease does).
 */
export const HOLD_GRANT_ROWS = `SELECT count(*)::int AS held FROM (
    SELECT 1 FROM locking WHERE NOT ${SEES_NEWEST} AND stamp = $1 AND app_id = $2 FOR KEY SHARE) AS grant_rows`;

/** The grants holding locks now, oldest first, with ages computed by the database; $1 only those holding this name,
 * $2 only those of this app id (each ignored when null). */
export const SELECT_GRANTS = `SELECT stamp, app_id, instance, lock_names, lock_modes, acquired,
    (extract(epoch FROM clock_timestamp() - acquired) * 1000)::float8 AS held_for_ms,
    (extract(epoch FROM lease_expires - clock_timestamp()) * 1000)::float8 AS lease_left_ms
  FROM locking_log
 WHERE stamp IN (SELECT stamp FROM locking WHERE ($1::text IS NULL OR lock_name = $1) AND ($2::text IS NULL OR app_id = $2))
 ORDER BY stamp`;

/**
 * $1 limit, and filters ignored when null: $2 acquired or ended since, $3 a name the grant held, $4 the stamp → the
 * newest log rows. `ended_by` and `end_reason` are read through the row's JSON, so that the statement also runs on a
 * schema older than the forced-release migration (they are then null).
 */
export const SELECT_LOG = `SELECT stamp, app_id, instance, lock_names, lock_modes, status, acquired, business_done, ended,
    to_jsonb(l) ->> 'ended_by' AS ended_by, to_jsonb(l) ->> 'end_reason' AS end_reason
  FROM locking_log l
 WHERE ($2::timestamptz IS NULL OR l.acquired >= $2 OR l.ended >= $2)
   AND ($3::text IS NULL OR $3 = ANY (l.lock_names))
   AND ($4::bigint IS NULL OR l.stamp = $4)
 ORDER BY l.stamp DESC LIMIT $1`;

/**
 * The 64-bit key of the instance lock of app id $1: a hash of the namespace and the app id (two different app ids
 * collide with odds of 2^-64; a 32-bit `hashtext` made `svc-6618` and `svc-136555` refuse each other).
 */
const APP_ID_KEY = `hashtextextended($1, ${INSTANCE_NAMESPACE})`;

/**
 * Whether this session may not write, and why: a standby (`in recovery`), or read-only transactions by default
 * (`default_transaction_read_only`, which a demoted primary may be given).
 */
export const SELECT_READ_ONLY = `SELECT CASE WHEN pg_is_in_recovery() THEN 'in recovery (a standby)'
    WHEN current_setting('transaction_read_only') = 'on' THEN 'transaction_read_only = on' END AS read_only`;

/**
 * The isolation level this session's statements run at when they name none (its `default_transaction_isolation`),
 * where that default comes from (`pg_settings.source`: `client` for the connection's options, `user`, `database`,
 * `database user`, `session`, `configuration file`, …), and the role and database to name in a message.
 */
export const SELECT_SESSION_ISOLATION = `SELECT current_setting('transaction_isolation') AS isolation, s.source,
    quote_ident(current_user) AS role, quote_ident(current_database()) AS database
  FROM pg_settings s WHERE s.name = 'default_transaction_isolation'`;

/**
 * $1 app id: the instance lock, held by the session for the life of the instance, and the session's pid; not taken
 * on a server that may not write (`read_only` says why), where grants would fail: the claim refuses it in the same
 * round trip.
 */
export const TRY_CLAIM_APP_ID = `SELECT CASE WHEN r.read_only IS NULL THEN pg_try_advisory_lock(${APP_ID_KEY}) ELSE false END
    AS claimed, pg_backend_pid() AS pid, r.read_only
  FROM (${SELECT_READ_ONLY}) r`;

/**
 * The granted instance lock of app id $1 in `pg_locks` (a bigint key shows as its high and low 32 bits), in this
 * database: an advisory lock is the database's own, and `pg_locks` shows those of every database of the server, where
 * the same app id may run too (staging beside production, a database per tenant) without being a twin.
 */
const APP_ID_LOCK = `l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ((${APP_ID_KEY} >> 32) & 4294967295)::oid
    AND l.objid = (${APP_ID_KEY} & 4294967295)::oid`;

/** $1 app id: the pid of the process holding its instance lock (also while it exits, gone from pg_stat_activity). */
export const SELECT_APP_ID_HOLDER_PID = `SELECT l.pid FROM pg_locks l WHERE ${APP_ID_LOCK} LIMIT 1`;

/** $1 app id, $2 pid: ends that process if it holds the instance lock, waiting up to a second for it to exit. */
export const END_STALE_CLAIM = `SELECT pg_terminate_backend(l.pid, 1000) AS ended FROM pg_locks l
  WHERE ${APP_ID_LOCK} AND l.pid = $2`;

/** $1 app id: who holds the instance lock of an app id (for the error message). */
export const SELECT_APP_ID_HOLDER = `SELECT a.application_name, a.client_addr::text AS client_addr, a.pid
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
  WHERE ${APP_ID_LOCK}
  LIMIT 1`;

/** All permits rows. */
export const SELECT_ALL_PERMITS = `SELECT lock_name, mode, permits FROM locking_permissions`;

/** $1 name, $2 mode ('R'/'W'), $3 permits. */
export const UPSERT_PERMITS = `INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ($1, $2, $3)
  ON CONFLICT (lock_name, mode) DO UPDATE SET permits = EXCLUDED.permits`;

/** $1 name, $2 mode ('R'/'W'). */
export const DELETE_PERMITS = `DELETE FROM locking_permissions WHERE lock_name = $1 AND mode = $2`;

/** A row of `locking_instances` (alias `i`) that nothing holds on to: no grant and no waiter of its app id. */
const INSTANCE_UNUSED = `NOT EXISTS (SELECT 1 FROM locking k WHERE k.app_id = i.app_id)
    AND NOT EXISTS (SELECT 1 FROM locking_waiters w WHERE w.app_id = i.app_id)`;

/** $1 retention (ms), $2 limit: the app ids of instance rows that may be retired, oldest first (see RETIRE_INSTANCE). */
export const SELECT_RETIRABLE_INSTANCES = `SELECT i.app_id FROM locking_instances i
  WHERE i.claimed < now() - $1 * interval '1 millisecond' AND ${INSTANCE_UNUSED}
  ORDER BY i.claimed LIMIT $2`;

/**
 * $1 app id, $2 retention (ms): deletes its instance row if it is still old and unused, and nobody holds its app id's
 * instance lock (the instance is gone); a claim that comes later records the row again.
 */
export const RETIRE_INSTANCE = `DELETE FROM locking_instances i
  WHERE i.app_id = $1 AND i.claimed < now() - $2 * interval '1 millisecond' AND ${INSTANCE_UNUSED}
    AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE ${APP_ID_LOCK})`;

/** $1 app id → the process key its previous holder recorded (no row: none ever did). */
export const SELECT_INSTANCE_KEY = `SELECT process_key FROM locking_instances WHERE app_id = $1`;

/** $1 app id, $2 instance, $3 process key (or null): this process holds the app id now. */
export const RECORD_INSTANCE = `INSERT INTO locking_instances (app_id, instance, process_key, claimed)
  VALUES ($1, $2, $3, now())
  ON CONFLICT (app_id) DO UPDATE SET instance = $2, process_key = $3, claimed = now()`;
