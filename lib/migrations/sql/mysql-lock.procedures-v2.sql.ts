/**
 * The second version of the MySQL and MariaDB hot path's procedures, created by the migration
 * `FasterMysqlLockProcedures1796400000000` (issue 30; the first version is `mysql-lock.procedures.sql.ts`, which stays
 * as shipped). Same decisions, same rows, same transactions (READ COMMITTED, one commit, rolled back and re-raised on
 * any error); less work per call, as measured on MariaDB 10.11 (docs/benchmark.md, "MySQL and MariaDB"):
 * - `locking_try_acquire_one`, the twin of the group procedure for the common call (one lock): the name and mode come
 *   as plain parameters, no JSON to parse; the check (`nameBusy`) is one indexed read of the name's lock rows, and
 *   the permits row or the waiters are read only when they can change the answer (a held name in the same mode; a
 *   read). The first version's check, one query over `JSON_TABLE` with four correlated subqueries, took about four
 *   times its server time.
 * - `locking_try_acquire` (same signature): checks name by name as the twin does, first on committed rows without
 *   locking anything, refusing at once when some lock is busy (a refusal needs no row lock: a grant in flight on those
 *   names would only make the group busier); otherwise locks the names' rows, checks again under those locks and
 *   grants, as before. Refused attempts, most attempts under contention, no longer queue on the names' rows behind
 *   grants that wait for their commit to reach the disk.
 * - `locking_try_acquire_batch`: the groups of several concurrent callers of one process (the store coalesces them)
 *   in one call, one transaction and one commit, decided in order as that many calls in a row would decide them.
 * `locking_release` is unchanged (the first version's).
 * @internal
 */
import { CREATE_MYSQL_LOCK_PROCEDURES } from './mysql-lock.procedures.sql.js';

/** A group's names (`names`, a JSON array) as rows: their position from 1 (`ord`), and the name byte for byte. */
const groupNames = (names: string): string => `JSON_TABLE(${names}, '$[*]' COLUMNS (
    ord FOR ORDINALITY,
    name VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$'))`;
const GROUP_NAMES = groupNames('p_names');

/** The mode (`R` or `W`) of the group's name at position `ord` (`modes` is the JSON array of modes beside it). */
const modeAt = (modes: string, ord: string): string => `JSON_UNQUOTE(JSON_EXTRACT(${modes}, CONCAT('$[', ${ord} - 1, ']')))`;

/** `waiter`'s place in the queue (no waiter, or one without rows: behind every writer). */
export const waiterSeq = (waiter: string): string =>
  `COALESCE((SELECT MIN(o.seq) FROM locking_waiters o WHERE o.waiter = ${waiter}), 9223372036854775807)`;

/**
 * Whether one lock (`name`, `mode`: expressions compared byte for byte; `waiter` or null) is busy, into `v_busy`, as
 * statements: the name's rows held (`v_held`) and those in the asked mode (`v_same`) in one indexed read; busy when
 * the other mode is held, or the same mode up to its permits (the permits row is read only when the name is held in
 * that mode: permits are at least 1), or for a read behind a writer that registered before this waiter. The
 * decision of the first version's set-based check for one name, for about a quarter of its server time (measured: a
 * query over `JSON_TABLE` with correlated subqueries is planned and run anew at every call, 230 µs against 54 µs).
 * A plain `SELECT … INTO` at READ COMMITTED reads what is committed, without locking (a subquery of `IF EXISTS (…)`
 * or `SET = (…)` would be a locking read in InnoDB, and wait for releases in flight).
 */
const nameBusy = (order: OrderCheck, name: string, mode: string, waiter: string): string => `SELECT COUNT(*), COALESCE(SUM(l.mode = ${mode}), 0)
        INTO v_held, v_same FROM locking l WHERE l.lock_name = ${name};
      IF v_held > v_same THEN
        SET v_busy = 1;
      ELSEIF v_same > 0 THEN
        SELECT v_same >= COALESCE(MAX(p.permits), IF(${mode} = 'W', p_write_permits, p_read_permits)) INTO v_busy
          FROM locking_permissions p WHERE p.lock_name = ${name} AND p.mode = ${mode};
      END IF;
      ${order(name, mode, waiter)}`;

/**
 * The order among waiters, after the permits check of one name (`name`, `mode`, `waiter`: SQL expressions), as
 * statements that may set `v_busy`. A later version passes its own (`mysql-lock.procedures-v3.sql.ts`).
 * @internal
 */
export type OrderCheck = (name: string, mode: string, waiter: string) => string;

/** The second version's order: a read yields to a writer that registered before its waiter. */
const READERS_YIELD: OrderCheck = (name, mode, waiter) => `IF v_busy = 0 AND ${mode} = 'R' THEN
        SELECT EXISTS (SELECT 1 FROM locking_waiters w
                        WHERE w.lock_name = ${name} AND w.mode = 'W' AND w.expires > UTC_TIMESTAMP(6)
                          AND w.seq < ${waiterSeq(waiter)}) INTO v_busy;
      END IF`;

/** Whether some lock of a group (`names`, `modes`: JSON arrays) is busy, into `v_busy`: `nameBusy` name by name. */
const groupBusyByName = (order: OrderCheck, names: string, modes: string, waiter: string): string => `SET v_busy = 0;
    SET v_i = 0;
    SET v_n = JSON_LENGTH(${names});
    WHILE v_busy = 0 AND v_i < v_n DO
      SET v_name = JSON_UNQUOTE(JSON_EXTRACT(${names}, CONCAT('$[', v_i, ']')));
      SET v_mode = JSON_UNQUOTE(JSON_EXTRACT(${modes}, CONCAT('$[', v_i, ']')));
      ${nameBusy(order, 'v_name COLLATE utf8mb4_bin', 'v_mode COLLATE utf8mb4_bin', waiter)};
      SET v_i = v_i + 1;
    END WHILE`;

/** The variables `groupBusyByName` uses. */
const BY_NAME_VARIABLES = `DECLARE v_i INT DEFAULT 0;
  DECLARE v_n INT DEFAULT 0;
  DECLARE v_held INT DEFAULT 0;
  DECLARE v_same INT DEFAULT 0;
  DECLARE v_name VARCHAR(200) CHARACTER SET utf8mb4;
  DECLARE v_mode CHAR(1) CHARACTER SET utf8mb4;`;

/** The lock rows of a granted group (`names`, `modes`), stamped `v_stamp`. */
const insertLocks = (names: string, modes: string): string => `INSERT INTO locking (lock_name, mode, app_id, stamp, created)
      SELECT g.name, ${modeAt(modes, 'g.ord')}, p_app_id, v_stamp, UTC_TIMESTAMP(6) FROM ${groupNames(names)} g`;

/**
 * What a grant writes into its names' existing rows in `locking_names` (`ON DUPLICATE KEY UPDATE …`): the second and
 * third versions write the name back unchanged, which locks the row on one server; a later version counts the grant
 * (`mysql-lock.procedures-v4.sql.ts`), so that Galera certifies it.
 * @internal
 */
export type NameRowWrite = string;

/** The unchanged write of the second and third versions. */
const NAME_UNCHANGED: NameRowWrite = 'lock_name = locking_names.lock_name';

/** Parameters of both acquisition procedures after the names and modes. */
const TAIL_PARAMETERS = `IN p_lease_ms BIGINT,
    IN p_waiter VARCHAR(64) CHARACTER SET utf8mb4,
    IN p_write_permits INT,
    IN p_read_permits INT)
  MODIFIES SQL DATA
  SQL SECURITY INVOKER`;

/** The grant's log row (its `AUTO_INCREMENT` id is the stamp, into `v_stamp`), names and modes as JSON arrays. */
const INSERT_LOG = (names: string, modes: string): string => `INSERT INTO locking_log
        (app_id, instance, lock_names, lock_modes, status, acquired, lease_expires)
      VALUES (p_app_id, p_instance, ${names}, ${modes}, 'ACQUIRED', UTC_TIMESTAMP(6),
              UTC_TIMESTAMP(6) + INTERVAL (p_lease_ms * 1000) MICROSECOND);
    SET v_stamp = LAST_INSERT_ID()`;

/** A granted waiter's rows go in the grant's commit. */
const deleteWaiter = (waiter: string): string => `IF ${waiter} IS NOT NULL THEN
      DELETE FROM locking_waiters WHERE waiter = ${waiter};
    END IF`;
const DELETE_WAITER = deleteWaiter('p_waiter');

/**
 * `CALL locking_try_acquire(app id, instance, names JSON, modes JSON, lease ms, waiter or null, default write
 * permits, default read permits)` → one row, `stamp` (0: some lock of the group is not available), second version.
 * The names come sorted (the caller's canonical order): their rows in `locking_names` are locked in that order, as
 * every grant locks them, so two grants queue instead of deadlocking.
 */
const createTryAcquire = (order: OrderCheck, write: NameRowWrite): string => `CREATE PROCEDURE locking_try_acquire(
    IN p_app_id VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_instance VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_names LONGTEXT CHARACTER SET utf8mb4,
    IN p_modes LONGTEXT CHARACTER SET utf8mb4,
    ${TAIL_PARAMETERS}
BEGIN
  DECLARE v_stamp BIGINT DEFAULT 0;
  DECLARE v_busy INT DEFAULT 0;
  ${BY_NAME_VARIABLES}
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  -- Committed rows, no lock: a group busy now is refused without queueing on its names' rows.
  ${groupBusyByName(order, 'p_names', 'p_modes', 'p_waiter')};
  IF v_busy = 0 THEN
    INSERT INTO locking_names (lock_name)
      SELECT g.name FROM ${GROUP_NAMES} g ORDER BY g.ord
      ON DUPLICATE KEY UPDATE ${write};
    -- Again under the names' row locks: every grant of these names committed so far is counted.
    ${groupBusyByName(order, 'p_names', 'p_modes', 'p_waiter')};
  END IF;
  IF v_busy = 0 THEN
    ${INSERT_LOG('p_names', 'p_modes')};
    ${insertLocks('p_names', 'p_modes')};
    ${DELETE_WAITER};
  END IF;
  COMMIT;
  SELECT v_stamp AS stamp;
END`;

/** `p_name` and `p_mode` as the tables compare them: byte for byte (a parameter's collation is the database's). */
const NAME = 'p_name COLLATE utf8mb4_bin';
const MODE = 'p_mode COLLATE utf8mb4_bin';

/**
 * REFUSED_READS_ONLY: a waiter's attempt (`p_waiter` set) checks its name on committed rows first, without locking or
 * writing anything, and is refused there when the name is busy; only an attempt that may grant locks (and, from the
 * fourth version on, writes) the name's row and checks again under that lock. A release wakes every waiter of the
 * name, and all but one are refused: before, each of them locked and wrote the name's row, queued behind the others
 * and committed a write (waiting for the disk), and the one that could grant queued among them. A refusal on a stale
 * read is safe (nothing is granted), and the release that made it stale wakes the waiter again after its commit.
 */
const WAITER_CHECKS_FIRST = (order: OrderCheck): string => `
  IF p_waiter IS NOT NULL THEN
    ${nameBusy(order, NAME, MODE, 'p_waiter')};
  END IF;
  IF v_busy = 0 THEN`;

/**
 * `CALL locking_try_acquire_one(app id, instance, name, mode ('R'/'W'), lease ms, waiter or null, default write
 * permits, default read permits) → one row, `stamp`: `locking_try_acquire` for a group of one lock, deciding as it
 * does: the name's row locked, `nameBusy` under that lock, the log row and the lock row, one commit. No check before
 * the lock (unlike the group procedure): for the uncontended call it would be a second read for nothing. With
 * `waitersCheckFirst` (a later version, `mysql-lock.procedures-v5.sql.ts`), a waiter's attempt checks first without
 * locking, as the group procedure does.
 * @internal
 */
export const createTryAcquireOne = (order: OrderCheck, write: NameRowWrite, waitersCheckFirst = false): string => `CREATE PROCEDURE locking_try_acquire_one(
    IN p_app_id VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_instance VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_name VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_mode CHAR(1) CHARACTER SET utf8mb4,
    ${TAIL_PARAMETERS}
BEGIN
  DECLARE v_stamp BIGINT DEFAULT 0;
  DECLARE v_busy INT DEFAULT 0;
  DECLARE v_held INT DEFAULT 0;
  DECLARE v_same INT DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;${waitersCheckFirst ? WAITER_CHECKS_FIRST(order) : ''}
  INSERT INTO locking_names (lock_name) VALUES (${NAME})
    ON DUPLICATE KEY UPDATE ${write};
  ${nameBusy(order, NAME, MODE, 'p_waiter')};
  IF v_busy = 0 THEN
    ${INSERT_LOG(`JSON_ARRAY(${NAME})`, `JSON_ARRAY(${MODE})`)};
    INSERT INTO locking (lock_name, mode, app_id, stamp, created)
      VALUES (${NAME}, ${MODE}, p_app_id, v_stamp, UTC_TIMESTAMP(6));
    ${DELETE_WAITER};
  END IF;${waitersCheckFirst ? `
  END IF;` : ''}
  COMMIT;
  SELECT v_stamp AS stamp;
END`;

/** Group `v_g` (from 0) of `p_groups` into `v_names`, `v_modes` (JSON arrays) and `v_waiter` ('' in JSON: none). */
const GROUP_AT = `SET v_names = JSON_EXTRACT(p_groups, CONCAT('$[', v_g, '][0]'));
      SET v_modes = JSON_EXTRACT(p_groups, CONCAT('$[', v_g, '][1]'));
      SET v_waiter = NULLIF(JSON_UNQUOTE(JSON_EXTRACT(p_groups, CONCAT('$[', v_g, '][2]'))), '')`;

/**
 * `CALL locking_try_acquire_batch(app id, instance, groups JSON, lease ms, default write permits, default read
 * permits)` → one row, `stamps` (a JSON array, a stamp or 0 per group): the groups of several concurrent callers of
 * one process in one transaction and one commit, decided one after the other in the order given, as that many calls
 * of `locking_try_acquire` in a row would decide them (a group sees the grants of the groups before it). `groups` is
 * `[[names], [modes], waiter or '']` per group, each group's names sorted. Pass 1 checks every group on committed rows
 * without locking and refuses the busy ones; the names of the others are then locked in one statement, distinct and in
 * code point order (`utf8mb4_bin`, the order in which every grant locks its names), and pass 2 checks each of those
 * groups again under the locks and grants it.
 */
const createTryAcquireBatch = (order: OrderCheck, write: NameRowWrite): string => `CREATE PROCEDURE locking_try_acquire_batch(
    IN p_app_id VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_instance VARCHAR(200) CHARACTER SET utf8mb4,
    IN p_groups LONGTEXT CHARACTER SET utf8mb4,
    IN p_lease_ms BIGINT,
    IN p_write_permits INT,
    IN p_read_permits INT)
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
BEGIN
  DECLARE v_count INT DEFAULT 0;
  DECLARE v_g INT DEFAULT 0;
  DECLARE v_names LONGTEXT CHARACTER SET utf8mb4;
  DECLARE v_modes LONGTEXT CHARACTER SET utf8mb4;
  DECLARE v_waiter VARCHAR(64) CHARACTER SET utf8mb4;
  DECLARE v_busy INT DEFAULT 0;
  DECLARE v_stamp BIGINT DEFAULT 0;
  DECLARE v_open LONGTEXT CHARACTER SET utf8mb4 DEFAULT '';
  DECLARE v_stamps LONGTEXT CHARACTER SET utf8mb4 DEFAULT '';
  ${BY_NAME_VARIABLES}
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SET v_count = JSON_LENGTH(p_groups);
  -- Pass 1, committed rows, no lock: '1' in v_open for each group free now, '0' for a busy one.
  WHILE v_g < v_count DO
    ${GROUP_AT};
    ${groupBusyByName(order, 'v_names', 'v_modes', 'v_waiter')};
    SET v_open = CONCAT(v_open, IF(v_busy = 0, '1', '0'));
    SET v_g = v_g + 1;
  END WHILE;
  IF LOCATE('1', v_open) > 0 THEN
    INSERT INTO locking_names (lock_name)
      SELECT DISTINCT n.name FROM JSON_TABLE(p_groups, '$[*]' COLUMNS (
          gi FOR ORDINALITY,
          NESTED PATH '$[0][*]' COLUMNS (
            name VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$'))) n
       WHERE SUBSTRING(v_open, n.gi, 1) = '1'
       ORDER BY n.name
      ON DUPLICATE KEY UPDATE ${write};
  END IF;
  -- Pass 2, under the names' row locks, in order: each open group checked again (it sees the grants before it).
  SET v_g = 0;
  WHILE v_g < v_count DO
    SET v_stamp = 0;
    IF SUBSTRING(v_open, v_g + 1, 1) = '1' THEN
      ${GROUP_AT};
      ${groupBusyByName(order, 'v_names', 'v_modes', 'v_waiter')};
      IF v_busy = 0 THEN
        ${INSERT_LOG('v_names', 'v_modes')};
        ${insertLocks('v_names', 'v_modes')};
        ${deleteWaiter('v_waiter')};
      END IF;
    END IF;
    SET v_stamps = CONCAT(v_stamps, IF(v_g = 0, '', ','), v_stamp);
    SET v_g = v_g + 1;
  END WHILE;
  COMMIT;
  SELECT CONCAT('[', v_stamps, ']') AS stamps;
END`;

/**
 * The three acquisition procedures of the second version's text, deciding the order among waiters with `order` and
 * writing `write` into their names' existing rows (`CREATE` statements: the procedures must not exist); with
 * `waitersCheckFirst`, the one-lock procedure's waiter attempts check before they lock (REFUSED_READS_ONLY). @internal
 */
export const acquisitionProcedures = (
  order: OrderCheck,
  write: NameRowWrite = NAME_UNCHANGED,
  waitersCheckFirst = false,
): readonly string[] => [
  createTryAcquire(order, write),
  createTryAcquireOne(order, write, waitersCheckFirst),
  createTryAcquireBatch(order, write),
];

/** Installs the second version (run by the migration's `up` on MySQL and MariaDB). */
export const CREATE_MYSQL_LOCK_PROCEDURES_V2: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_try_acquire',
  ...acquisitionProcedures(READERS_YIELD),
];

/** The first version's `locking_try_acquire`, as shipped. */
const CREATE_TRY_ACQUIRE_V1 = CREATE_MYSQL_LOCK_PROCEDURES.filter((sql) => sql.includes('PROCEDURE locking_try_acquire('));

/** Puts the first version back (`down`): the twin goes, the group procedure is the first version's again. */
export const DROP_MYSQL_LOCK_PROCEDURES_V2: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_try_acquire_batch',
  'DROP PROCEDURE IF EXISTS locking_try_acquire_one',
  'DROP PROCEDURE IF EXISTS locking_try_acquire',
  ...CREATE_TRY_ACQUIRE_V1,
];

/** Every lock procedure of every version, dropped: what a database not migrated to the first version has. */
export const DROP_ALL_MYSQL_LOCK_PROCEDURES: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_try_acquire_batch',
  'DROP PROCEDURE IF EXISTS locking_try_acquire_one',
  'DROP PROCEDURE IF EXISTS locking_try_acquire',
  'DROP PROCEDURE IF EXISTS locking_release',
  'DROP PROCEDURE IF EXISTS locking_release_quiet',
];
