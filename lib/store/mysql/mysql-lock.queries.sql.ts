/**
 * The statements of the running lock engine on MySQL and MariaDB, parameterised (`?`). The tables are in
 * `lib/migrations/sql/mysql-lock.schema.sql.ts`. Times are database time in UTC; durations are passed in milliseconds and applied as
 * microsecond intervals.
 * @internal
 */

/** Statuses of a grant that still holds its locks, as an SQL list. */
export const LIVE = `('ACQUIRED', 'BUSINESS_DONE')`;

/** The database's clock, in UTC (the tables hold UTC). */
export const NOW = 'UTC_TIMESTAMP(6)';

/** `NOW` plus ? milliseconds. */
const NOW_PLUS_MS = `${NOW} + INTERVAL (? * 1000) MICROSECOND`;

/** `NOW` minus ? milliseconds. */
const NOW_MINUS_MS = `${NOW} - INTERVAL (? * 1000) MICROSECOND`;

/** A UTC `DATETIME(6)` column as an ISO 8601 string (the driver would read it in the client's time zone). */
export const isoOf = (column: string): string => `DATE_FORMAT(${column}, '%Y-%m-%dT%H:%i:%s.%fZ')`;

/** `?, ?, …` for `count` values. */
export const placeholders = (count: number): string => Array.from({ length: count }, () => '?').join(', ');

/**
 * `count` requests (name, mode) as a derived table's rows. The name is compared byte for byte: a parameter arrives in
 * the connection's collation (often case-insensitive), and MariaDB's subquery cache keys the correlated subqueries
 * on that value, so `doc:a` would get the answer computed for `doc:A` in the same group.
 */
function requestRows(count: number): string {
  const name = 'CONVERT(? USING utf8mb4) COLLATE utf8mb4_bin';
  return Array.from({ length: count }, (_, i) => (i === 0 ? `SELECT ${name} AS name, ? AS mode` : `SELECT ${name}, ?`)).join(
    ' UNION ALL ',
  );
}

/**
 * Locks the rows of names `?…` (sorted, distinct), creating those that do not exist: the per-name mutex of a grant,
 * held until its transaction ends. An INSERT … ON DUPLICATE KEY UPDATE takes an exclusive lock on an existing row and
 * on a new one alike, in the order of its values: two grants that share names lock them in the same order, so they
 * queue instead of deadlocking. `counted`: the grant is counted in the row (`grants`, migration
 * `MysqlCertifiedWrites1797200000000`), a write that a Galera cluster certifies (a row written back unchanged is not
 * written at all, and row locks hold on one node only); without it, for a database before that migration, the name
 * is written back unchanged.
 */
export const lockNames = (count: number, counted: boolean): string =>
  `INSERT INTO locking_names (lock_name) VALUES ${Array.from({ length: count }, () => '(?)').join(', ')}
   ON DUPLICATE KEY UPDATE ${counted ? 'grants = grants + 1' : 'lock_name = lock_name'}`;

/**
 * ? waiter (null when not waiting), then `count` requests, each as (name, mode) → for each, the rows held in its mode
 * and in the other mode, its permits row (null: the defaults apply), and whether a waiter that registered before the
 * waiter waits for it (`writer_first`: a write then yields to any such waiter, a read to such a writer, unless another
 * name of that waiter's group is held against it; the procedures' third version, `mysql-lock.procedures-v3.sql.ts`,
 * decides alike). Read after `lockNames`, at READ COMMITTED: every grant committed on these names so far is counted, and no other can be inserted until this
 * transaction ends. Permits are read here, from committed rows, never from a client cache.
 */
export const checkGroup = (count: number): string => {
  const requests = requestRows(count);
  return `SELECT r.name, r.mode,
    (SELECT COUNT(*) FROM locking l WHERE l.lock_name = r.name AND l.mode = r.mode) AS same_mode,
    (SELECT COUNT(*) FROM locking l WHERE l.lock_name = r.name AND l.mode <> r.mode) AS other_mode,
    (SELECT p.permits FROM locking_permissions p WHERE p.lock_name = r.name AND p.mode = r.mode) AS permits,
    EXISTS (
       SELECT 1 FROM locking_waiters w
        WHERE w.lock_name = r.name AND (r.mode = 'W' OR w.mode = 'W') AND w.expires > ${NOW}
          AND w.seq < COALESCE((SELECT MIN(o.seq) FROM locking_waiters o WHERE o.waiter = ?), 9223372036854775807)
          AND NOT EXISTS (SELECT 1 FROM locking_waiters g JOIN locking l ON l.lock_name = g.lock_name
                           WHERE g.waiter = w.waiter AND g.lock_name <> r.name AND g.expires > ${NOW}
                             AND (g.mode = 'W' OR l.mode = 'W'))
    ) AS writer_first
  FROM (${requests}) AS r`;
};

/**
 * ? app id, ? instance, ? names (JSON), ? modes (JSON), ? lease (ms), ? waiter (or null), ? default write permits,
 * ? default read permits → `stamp` (0: not available). The whole grant below, as one call
 * (`lib/migrations/sql/mysql-lock.procedures.sql.ts`).
 */
export const CALL_TRY_ACQUIRE = 'CALL locking_try_acquire(?, ?, ?, ?, ?, ?, ?, ?)';

/**
 * ? app id, ? instance, ? name, ? mode ('R'/'W'), ? lease (ms), ? waiter (or null), ? default write permits, ? default
 * read permits → `stamp`: `CALL_TRY_ACQUIRE` for a group of one lock (the procedures' second version,
 * `lib/migrations/sql/mysql-lock.procedures-v2.sql.ts`).
 */
export const CALL_TRY_ACQUIRE_ONE = 'CALL locking_try_acquire_one(?, ?, ?, ?, ?, ?, ?, ?)';

/**
 * ? app id, ? instance, ? groups (JSON: `[[names], [modes], waiter or '']` each), ? lease (ms), ? default write
 * permits, ? default read permits → `stamps` (JSON array, one per group, 0 for a refused one): several callers' groups
 * in one transaction, decided in order (second version).
 */
export const CALL_TRY_ACQUIRE_BATCH = 'CALL locking_try_acquire_batch(?, ?, ?, ?, ?, ?)';

/** ? stamp, ? app id → `lock_names` (JSON; null when nothing matched). The whole release below, as one call. */
export const CALL_RELEASE = 'CALL locking_release(?, ?)';

/**
 * ? stamp, ? app id → no result set (the OK packet's affected rows: > 0 when it released), or one row, `released`
 * (1 or 0) and `doorbells`, when there are doorbells to ring (always on MySQL). The release of a grant whose names the
 * caller knows.
 */
export const CALL_RELEASE_QUIET = 'CALL locking_release_quiet(?, ?)';

/** ? app id, ? instance, ? names (JSON), ? modes (JSON), ? lease (ms): the grant's log row; its id is the stamp. */
export const INSERT_GRANT_LOG = `INSERT INTO locking_log
  (app_id, instance, lock_names, lock_modes, status, acquired, lease_expires)
  VALUES (?, ?, ?, ?, 'ACQUIRED', ${NOW}, ${NOW_PLUS_MS})`;

/** The lock rows of a grant of `count` locks: (name, mode, app id, stamp) each. */
export const insertLocks = (count: number): string =>
  `INSERT INTO locking (lock_name, mode, app_id, stamp, created) VALUES ${Array.from(
    { length: count },
    () => `(?, ?, ?, ?, ${NOW})`,
  ).join(', ')}`;

/** ? waiter → whether it still has rows (a grant removes them in its own commit). */
export const SELECT_WAITER_REGISTERED = `SELECT EXISTS (SELECT 1 FROM locking_waiters WHERE waiter = ?) AS waiting`;

/** ? waiter: its rows go once it is granted. */
export const DELETE_WAITER = `DELETE FROM locking_waiters WHERE waiter = ?`;

/**
 * A waiter's rows for `count` names: (name, waiter, mode, app id, time to live in ms) each, then the time to live once
 * more; refreshes its expiry. (No `VALUES(col)`: deprecated on MySQL 8.0.20+, and its replacement is not MariaDB's.)
 */
export const registerWaiter = (count: number): string =>
  `INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, registered) VALUES ${Array.from(
    { length: count },
    () => `(?, ?, ?, ?, ${NOW_PLUS_MS}, ${NOW})`,
  ).join(', ')}
  ON DUPLICATE KEY UPDATE expires = ${NOW_PLUS_MS}`;

/**
 * `registerWaiter` where a release may hand the waiter a grant (`mysql-lock-hand-over.sql.ts`): (name, waiter, mode,
 * app id, instance, time to live in ms) each, then the time to live once more. The rows say `handover`; a row already
 * handed a grant keeps its end (the grant's lease was counted from it; `SELECT_WAITER_HANDED` then tells).
 */
export const registerHandOverWaiter = (count: number): string =>
  `INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, instance, handover, expires, registered) VALUES ${Array.from(
    { length: count },
    () => `(?, ?, ?, ?, ?, 1, ${NOW_PLUS_MS}, ${NOW})`,
  ).join(', ')}
  ON DUPLICATE KEY UPDATE expires = IF(granted IS NULL, ${NOW_PLUS_MS}, expires)`;

/** ? waiter → `handed`: how many of its rows a release has handed a grant (read after a refresh). */
export const SELECT_WAITER_HANDED = `SELECT COUNT(granted) AS handed FROM locking_waiters WHERE waiter = ?`;

/** ? waiter → `granted`: the stamp a release handed it (null: none), its rows locked until they are deleted. */
export const SELECT_WAITER_GRANT = `SELECT MAX(granted) AS granted FROM locking_waiters WHERE waiter = ? FOR UPDATE`;

/**
 * ? lease (ms), ? stamp, ? app id: a grant a release handed to a waiter of this app, claimed by the waiter's attempt
 * (its wait could not count the lease it was handed with): its lease counted from now, if it has not ended.
 */
export const CLAIM_HANDED_GRANT = `UPDATE locking_log SET lease_expires = ${NOW_PLUS_MS}, version = version + 1
  WHERE stamp = ? AND app_id = ? AND status IN ${LIVE} AND lease_expires > ${NOW}`;

/**
 * ? time to live (ms), ? waiter, ? stamp: the waiter's rows wait again (they keep their place, `seq`), after the grant
 * handed to them ended before it was claimed.
 */
export const UNMARK_HANDED_WAITER = `UPDATE locking_waiters SET granted = NULL, expires = ${NOW_PLUS_MS}
  WHERE waiter = ? AND granted = ?`;

/** ? stamp, ? app id: ends a live grant as RELEASED (then its lock rows go, in the same transaction). */
export const END_GRANT_RELEASED = `UPDATE locking_log SET status = 'RELEASED', ended = ${NOW}, version = version + 1
  WHERE stamp = ? AND app_id = ? AND status IN ${LIVE}`;

/** ? stamp: the names a grant holds. */
export const SELECT_GRANT_NAMES = `SELECT DISTINCT lock_name FROM locking WHERE stamp = ?`;

/**
 * ? stamp, ? app id: the connection ids (comma-separated; null when none) of the doorbells of other app ids whose live
 * waiters wait for a name of the grant, read before its lock rows go: what `locking_release` answers as `doorbells`.
 */
export const SELECT_GRANT_DOORBELLS = `SELECT GROUP_CONCAT(DISTINCT d.connection_id) AS doorbells
  FROM locking k
  JOIN locking_waiters w ON w.lock_name = k.lock_name
  JOIN locking_doorbells d ON d.app_id = w.app_id
 WHERE k.stamp = ? AND w.app_id <> ? AND w.expires > ${NOW}`;

/** ? stamp: frees a grant's lock rows. */
export const DELETE_GRANT_LOCKS = `DELETE FROM locking WHERE stamp = ?`;

/** Stamps `?…` of app id ? whose grant is live with a lease that has not ended. */
export const selectLiveStamps = (count: number, forUpdate: boolean): string =>
  `SELECT stamp FROM locking_log
    WHERE stamp IN (${placeholders(count)}) AND app_id = ? AND status IN ${LIVE} AND lease_expires > ${NOW}
    ${forUpdate ? 'FOR UPDATE SKIP LOCKED' : ''}`;

/**
 * ? max hold (ms, 0 = none), ? lease (ms), ? max hold, ? lease, then stamps `?…`: extends their leases, never past the
 * max hold after the grant's acquisition (a grant's max hold is its holder's own: the holder is told first).
 */
export const renewLeases = (count: number): string =>
  `UPDATE locking_log SET version = version + 1,
     lease_expires = IF(? > 0, LEAST(${NOW_PLUS_MS}, acquired + INTERVAL (? * 1000) MICROSECOND), ${NOW_PLUS_MS})
   WHERE stamp IN (${placeholders(count)})`;

/**
 * ? batch size: the stale grants that still hold locks (lease ended; a max hold ends the lease, see `renewLeases`),
 * oldest lease first, read without locking anything: a locking read would lock every row its scan reads, live grants'
 * too (InnoDB evaluates the lease after locking the row), and a renewal meeting such a row skips it (it never waits),
 * so that a live grant skipped at two renewals in a row was lost to reapers that merely looked at it.
 * `lockStale` then locks the candidates alone, by their primary key.
 */
export const SELECT_STALE = `SELECT g.stamp FROM locking_log g
  WHERE g.stamp IN (SELECT k.stamp FROM locking k) AND g.status IN ${LIVE}
    AND g.lease_expires < ${NOW}
  ORDER BY g.lease_expires
  LIMIT ?`;

/**
 * Stamps `?…` (`SELECT_STALE`'s candidates): those still stale, their log rows locked, by primary key only (no live
 * grant's row is touched); rows another transaction has locked (a business transaction fencing its grant, a release
 * in progress) are skipped.
 */
export const lockStale = (count: number): string =>
  `SELECT stamp FROM locking_log
    WHERE stamp IN (${placeholders(count)}) AND status IN ${LIVE} AND lease_expires < ${NOW}
    FOR UPDATE SKIP LOCKED`;

/** `status` (a literal), then stamps `?…`: ends those grants. */
export const endGrants = (status: 'REAPED' | 'RECOVERED', count: number): string =>
  `UPDATE locking_log SET status = '${status}', ended = ${NOW}, version = version + 1
    WHERE stamp IN (${placeholders(count)}) AND status IN ${LIVE}`;

/** The distinct names held by stamps `?…`. */
export const selectNamesOf = (count: number): string =>
  `SELECT DISTINCT lock_name FROM locking WHERE stamp IN (${placeholders(count)})`;

/** Frees the lock rows of stamps `?…`. */
export const deleteLocksOf = (count: number): string => `DELETE FROM locking WHERE stamp IN (${placeholders(count)})`;

/** Stamps `?…` (grants that ended otherwise than by their release): the rows of the waiters they were handed to. */
export const deleteHandedWaitersOf = (count: number): string =>
  `DELETE FROM locking_waiters WHERE granted IN (${placeholders(count)})`;

/** Waiter rows that expired over a minute ago (their process is gone). */
export const DELETE_EXPIRED_WAITERS = `DELETE FROM locking_waiters WHERE expires < ${NOW} - INTERVAL 1 MINUTE`;

/**
 * ? batch size: name rows that no lock row uses. They are only mutexes: a grant creates its names' rows again, so
 * pruning keeps the table as small as the names in use, however many names an application derives.
 */
export const PRUNE_NAMES = `DELETE FROM locking_names
  WHERE lock_name NOT IN (SELECT k.lock_name FROM locking k) LIMIT ?`;

/** ? app id: the stamps of its grants that hold locks (start-up recovery). */
export const SELECT_APP_STAMPS = `SELECT DISTINCT stamp FROM locking WHERE app_id = ?`;

/** ? app id: its lock rows (start-up recovery, after its log rows are ended). */
export const DELETE_APP_LOCKS = `DELETE FROM locking WHERE app_id = ?`;

/** ? app id: its waiter rows. */
export const DELETE_APP_WAITERS = `DELETE FROM locking_waiters WHERE app_id = ?`;

/** ? age (ms) twice, ? batch size: deletes ended log rows older than the age. */
export const PRUNE_LOG = `DELETE FROM locking_log
  WHERE acquired < ${NOW_MINUS_MS} AND ended < ${NOW_MINUS_MS}
  ORDER BY acquired LIMIT ?`;

/**
 * ? stamp, ? app id: → BUSINESS_DONE, only while the grant is live, holds its locks and its lease has not ended. Run
 * inside the caller's transaction: `UTC_TIMESTAMP(6)` is the statement's time, not the transaction's start. The check
 * of its lock rows looks up the first one by its whole primary key: at REPEATABLE READ (MySQL's default) a subquery of
 * an UPDATE may be a locking read, and a lookup by `stamp` alone could lock the gap after the newest stamp until the
 * business transaction ends, holding up every grant meanwhile; a unique lookup locks that one row at most.
 */
export const MARK_BUSINESS_DONE = `UPDATE locking_log l
  SET l.status = 'BUSINESS_DONE', l.business_done = ${NOW}, l.version = l.version + 1
  WHERE l.stamp = ? AND l.app_id = ? AND l.status IN ${LIVE} AND l.lease_expires > ${NOW}
    AND EXISTS (SELECT 1 FROM locking k
                 WHERE k.lock_name = JSON_UNQUOTE(JSON_EXTRACT(l.lock_names, '$[0]'))
                   AND k.mode = JSON_UNQUOTE(JSON_EXTRACT(l.lock_modes, '$[0]'))
                   AND k.stamp = l.stamp)`;

/**
 * The named lock (`GET_LOCK`) of app id ? in this database: the names are server-wide, so the database's name is part
 * of it (two applications in two databases of one server may share an app id, as on PostgreSQL); 64 characters at
 * most, so a hash (two collide with odds of 2^-240).
 */
const APP_ID_LOCK = `CONCAT('nestjs-db-locks:', LEFT(SHA2(CONCAT(DATABASE(), CHAR(0), ?), 256), 48))`;

/** A row of `locking_instances` (alias `i`) that nothing holds on to: no grant and no waiter of its app id. */
const INSTANCE_UNUSED = `NOT EXISTS (SELECT 1 FROM locking k WHERE k.app_id = i.app_id)
    AND NOT EXISTS (SELECT 1 FROM locking_waiters w WHERE w.app_id = i.app_id)`;

/** ? retention (ms), ? limit: the app ids of instance rows that may be retired, oldest first (see RETIRE_INSTANCE). */
export const SELECT_RETIRABLE_INSTANCES = `SELECT i.app_id FROM locking_instances i
  WHERE i.claimed < ${NOW_MINUS_MS} AND ${INSTANCE_UNUSED}
  ORDER BY i.claimed LIMIT ?`;

/**
 * ? app id, ? retention (ms), ? app id: deletes its instance row if it is still old and unused, and nobody holds its
 * app id's named lock (the instance is gone); a claim that comes later records the row again.
 */
export const RETIRE_INSTANCE = `DELETE i FROM locking_instances i
  WHERE i.app_id = ? AND i.claimed < ${NOW_MINUS_MS} AND ${INSTANCE_UNUSED}
    AND IS_USED_LOCK(${APP_ID_LOCK}) IS NULL`;

/** The instance session's own idle limit: a year (the largest `wait_timeout` MySQL and MariaDB take on Linux). */
export const KEEP_SESSION_OPEN = `SET SESSION wait_timeout = 31536000`;

/** Why the server may not write (`read_only`, set on replicas and demoted primaries), null when it may. */
const SELECT_READ_ONLY_REASON = `IF(@@global.read_only, 'read_only = ON', NULL)`;

/** Whether the server is a node of a Galera cluster: a row `wsrep_on` = `ON` (no row on MySQL without it). */
export const SHOW_WSREP_ON = `SHOW VARIABLES LIKE 'wsrep_on'`;

/** Whether the server may not write, and why (null: it may). */
export const SELECT_READ_ONLY = `SELECT ${SELECT_READ_ONLY_REASON} AS read_only`;

/** ? app id: the instance lock, held by the session for the life of the instance, and the session's id. */
export const TRY_CLAIM_APP_ID = `SELECT IF(@@global.read_only, 0, GET_LOCK(${APP_ID_LOCK}, 0)) AS claimed,
  CONNECTION_ID() AS pid, ${SELECT_READ_ONLY_REASON} AS read_only`;

/** ? app id: the connection id of the session holding its instance lock (null when none). */
export const SELECT_APP_ID_HOLDER_PID = `SELECT IS_USED_LOCK(${APP_ID_LOCK}) AS pid`;

/** ? app id: who holds the instance lock of an app id (for the error message). */
export const SELECT_APP_ID_HOLDER = `SELECT p.ID AS pid, p.USER AS user, p.HOST AS host
  FROM information_schema.PROCESSLIST p WHERE p.ID = IS_USED_LOCK(${APP_ID_LOCK})`;

/** ? app id, ? names, …: for the names that this app's waiters wait for, how many lock rows hold each now. */
export const SELECT_WAITED_NAMES = `SELECT w.lock_name AS name, COUNT(k.stamp) AS held
  FROM (SELECT DISTINCT lock_name FROM locking_waiters WHERE app_id = ?) AS w
  LEFT JOIN locking k ON k.lock_name = w.lock_name
  GROUP BY w.lock_name`;

/**
 * ? app id, ? app id: `SELECT_WAITED_NAMES` (rows with `waiter` null) and, for each waiter of this app a release has
 * handed a grant, its name, `waiter` and `granted` (its stamp): what the listener polls where releases hand over.
 */
export const SELECT_WAITED_NAMES_AND_HANDED = `SELECT w.lock_name AS name, COUNT(k.stamp) AS held, NULL AS waiter, NULL AS granted
  FROM (SELECT DISTINCT lock_name FROM locking_waiters WHERE app_id = ? AND granted IS NULL) AS w
  LEFT JOIN locking k ON k.lock_name = w.lock_name
  GROUP BY w.lock_name
  UNION ALL
  SELECT lock_name, 0, waiter, granted FROM locking_waiters WHERE app_id = ? AND granted IS NOT NULL`;

/**
 * ? default write permits, ? default read permits, then the requests as (name, mode) → those not available now ('held'
 * or 'writer-waiting', with `held_mode` the mode the name is held in, null when not held). A snapshot for a log line,
 * never for a decision.
 */
export const selectBusyLocks = (count: number): string => {
  const requests = requestRows(count);
  return `SELECT name, mode, busy, held_mode FROM (
    SELECT r.name, r.mode, (SELECT MIN(l.mode) FROM locking l WHERE l.lock_name = r.name) AS held_mode,
      CASE
        WHEN EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = r.name AND l.mode <> r.mode)
          OR (SELECT COUNT(*) FROM locking l WHERE l.lock_name = r.name AND l.mode = r.mode)
             >= COALESCE((SELECT p.permits FROM locking_permissions p WHERE p.lock_name = r.name AND p.mode = r.mode),
                         CASE r.mode WHEN 'W' THEN ? ELSE ? END) THEN 'held'
        WHEN r.mode = 'R' AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = r.name AND w.mode = 'W'
                                        AND w.expires > ${NOW}) THEN 'writer-waiting'
      END AS busy
    FROM (${requests}) AS r) AS checked
  WHERE busy IS NOT NULL ORDER BY name`;
};

/** All permits rows. */
export const SELECT_ALL_PERMITS = `SELECT lock_name, mode, permits FROM locking_permissions`;

/** ? name, ? mode ('R'/'W'), ? permits, ? permits again (no deprecated `VALUES(col)`). */
export const UPSERT_PERMITS = `INSERT INTO locking_permissions (lock_name, mode, permits) VALUES (?, ?, ?)
  ON DUPLICATE KEY UPDATE permits = ?`;

/** ? name, ? mode ('R'/'W'). */
export const DELETE_PERMITS = `DELETE FROM locking_permissions WHERE lock_name = ? AND mode = ?`;

/** ? app id → the process key its previous holder recorded (no row: none ever did). */
export const SELECT_INSTANCE_KEY = `SELECT process_key FROM locking_instances WHERE app_id = ?`;

/** ? app id, ? instance, ? process key (or null), then instance and key again: this process holds the app id now. */
export const RECORD_INSTANCE = `INSERT INTO locking_instances (app_id, instance, process_key, claimed)
  VALUES (?, ?, ?, ${NOW})
  ON DUPLICATE KEY UPDATE instance = ?, process_key = ?, claimed = ${NOW}`;

/** Whether the server writes a binary log, and in which format for this session. */
export const SELECT_BINLOG = `SELECT @@log_bin AS log_bin, @@session.binlog_format AS binlog_format`;

/** A release that matches nothing (stamp 0): proves the lock user may run the procedures. */
export const PROBE_PROCEDURES = 'CALL locking_release(0, NULL)';
