/**
 * The stored procedures of the MySQL and MariaDB hot path, created by the migration `MysqlLockProcedures1795800000000`:
 * a grant and a release each as one `CALL`, one round trip, where the same transaction sent statement by statement
 * takes seven and six. Each procedure runs its own transaction at READ COMMITTED (`SET TRANSACTION` there applies to
 * that transaction only: the session's level is left as it was) and commits it; on any error it rolls back and
 * re-raises the error unchanged, so a deadlock's victim is retried by the caller like any transaction of the store.
 * The statements are those of `lib/store/mysql/mysql-lock.queries.sql.ts`, in the same order; the store falls back to those when the
 * procedures do not exist yet (a database not migrated to this version).
 *
 * Parameters are declared `utf8mb4`, and the group's names are read as `utf8mb4_bin`: a procedure's string parameters
 * otherwise take the database's default character set and collation (often `latin1`, case-insensitive), and names
 * must compare byte for byte, as the tables' `utf8mb4_bin` columns do.
 * `SQL SECURITY INVOKER`: a call runs with the caller's privileges, so the procedures keep working when the user who
 * ran the migration is dropped.
 * @internal
 */

/** Statuses of a grant that still holds its locks, as an SQL list. */
import { LIVE } from '../../store/lock-sql.constants.js';

/** The group's names (`p_names`, a JSON array) as rows: their position from 1 (`ord`), and the name byte for byte. */
const GROUP_NAMES = `JSON_TABLE(p_names, '$[*]' COLUMNS (
    ord FOR ORDINALITY,
    name VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$'))`;

/** The mode (`R` or `W`) of the group's name at position `ord` (`p_modes` is the JSON array of modes beside it). */
const MODE_AT = (ord: string): string => `JSON_UNQUOTE(JSON_EXTRACT(p_modes, CONCAT('$[', ${ord} - 1, ']')))`;

/**
 * `CALL locking_try_acquire(app id, instance, names JSON, modes JSON, lease ms, waiter or null, default write
 * permits, default read permits)` → one row, `stamp` (0: some lock of the group is not available). The names come
 * sorted (the caller's canonical order): their rows in `locking_names` are locked in that order, as every grant locks
 * them, so two grants queue instead of deadlocking. The check reads, under those row locks, the rows held in each
 * mode, the permits row (committed, never a client cache) and a writer waiting ahead of this waiter; then the log
 * row (its `AUTO_INCREMENT` id is the stamp), the lock rows, the waiter's rows gone, one commit.
 */
const CREATE_TRY_ACQUIRE = `CREATE PROCEDURE locking_try_acquire(
    IN p_app_id VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_instance VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_names LONGTEXT CHARACTER SET utf8mb4,
    IN p_modes LONGTEXT CHARACTER SET utf8mb4,
    IN p_lease_ms BIGINT,
    IN p_waiter VARCHAR(64) CHARACTER SET utf8mb4,
    IN p_write_permits INT,
    IN p_read_permits INT)
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
BEGIN
  DECLARE v_stamp BIGINT DEFAULT 0;
  DECLARE v_busy INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  INSERT INTO locking_names (lock_name)
    SELECT g.name FROM ${GROUP_NAMES} g ORDER BY g.ord
    ON DUPLICATE KEY UPDATE lock_name = locking_names.lock_name;
  -- SELECT … INTO, not IF EXISTS (…) or SET = (…): InnoDB runs a subquery of those as a locking read, which would
  -- wait for (and deadlock with) releases in flight; a plain SELECT at READ COMMITTED reads what is committed.
  SELECT COUNT(*) INTO v_busy
    FROM (SELECT g.name, ${MODE_AT('g.ord')} COLLATE utf8mb4_bin AS mode FROM ${GROUP_NAMES} g) r
     WHERE EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = r.name AND l.mode <> r.mode)
        OR (SELECT COUNT(*) FROM locking l WHERE l.lock_name = r.name AND l.mode = r.mode)
           >= COALESCE((SELECT p.permits FROM locking_permissions p WHERE p.lock_name = r.name AND p.mode = r.mode),
                       IF(r.mode = 'W', p_write_permits, p_read_permits))
        OR (r.mode = 'R' AND EXISTS (
              SELECT 1 FROM locking_waiters w
               WHERE w.lock_name = r.name AND w.mode = 'W' AND w.expires > UTC_TIMESTAMP(6)
                 AND w.seq < COALESCE((SELECT MIN(o.seq) FROM locking_waiters o WHERE o.waiter = p_waiter),
                                      9223372036854775807)));
  IF v_busy = 0 THEN
    INSERT INTO locking_log (app_id, instance, lock_names, lock_modes, status, acquired, lease_expires)
      VALUES (p_app_id, p_instance, p_names, p_modes, 'ACQUIRED', UTC_TIMESTAMP(6),
              UTC_TIMESTAMP(6) + INTERVAL (p_lease_ms * 1000) MICROSECOND);
    SET v_stamp = LAST_INSERT_ID();
    INSERT INTO locking (lock_name, mode, app_id, stamp, created)
      SELECT g.name, ${MODE_AT('g.ord')}, p_app_id, v_stamp, UTC_TIMESTAMP(6) FROM ${GROUP_NAMES} g;
    IF p_waiter IS NOT NULL THEN
      DELETE FROM locking_waiters WHERE waiter = p_waiter;
    END IF;
  END IF;
  COMMIT;
  SELECT v_stamp AS stamp;
END`;

/**
 * `CALL locking_release(stamp, app id)` → one row, `lock_names` (the JSON array of the grant's names; null when no
 * live grant of that app id has that stamp: unknown, foreign, already released or reaped). The log row is ended
 * first, then the lock rows go, in the order every path that ends a grant takes its rows (no deadlock with the
 * reaper or a forced release).
 */
const CREATE_RELEASE = `CREATE PROCEDURE locking_release(
    IN p_stamp BIGINT,
    IN p_app_id VARCHAR(200) CHARACTER SET utf8mb4)
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
BEGIN
  DECLARE v_names LONGTEXT CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  UPDATE locking_log SET status = 'RELEASED', ended = UTC_TIMESTAMP(6), version = version + 1
   WHERE stamp = p_stamp AND app_id = p_app_id AND status IN ${LIVE};
  IF ROW_COUNT() > 0 THEN
    SELECT lock_names INTO v_names FROM locking_log WHERE stamp = p_stamp;
    DELETE FROM locking WHERE stamp = p_stamp;
  END IF;
  COMMIT;
  SELECT v_names AS lock_names;
END`;

/** Creates the procedures (run by the migration's `up` on MySQL and MariaDB). */
export const CREATE_MYSQL_LOCK_PROCEDURES: readonly string[] = [CREATE_TRY_ACQUIRE, CREATE_RELEASE];

/** Drops them (`down`): the store then sends the same statements one by one again. */
export const DROP_MYSQL_LOCK_PROCEDURES: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_release',
  'DROP PROCEDURE IF EXISTS locking_try_acquire',
];
