/**
 * The doorbells of MySQL and MariaDB, created by the migration `MysqlLockDoorbells1796500000000`: how a release tells
 * waiters of other instances that names they wait for are free, where PostgreSQL sends a NOTIFY. An instance with
 * waiters keeps one connection sleeping in the server (`SELECT SLEEP(n)`, tagged) and records its connection id in
 * `locking_doorbells`; `locking_release` answers, beside the names it freed, the doorbells of the other instances
 * that have live waiter rows on those names, and the releasing instance interrupts those sleeps (`KILL QUERY`) after
 * checking that each thread runs its doorbell's tagged statement (`lib/store/mysql/mysql-doorbell.ringer.ts`).
 * @internal
 */
import { CREATE_MYSQL_LOCK_PROCEDURES } from './mysql-lock.procedures.sql.js';
import { LIVE } from '../../store/lock-sql.constants.js';

/**
 * One row per app id whose instance has waiters now (rows of instances gone stay until they are replaced: a ring checks
 * the thread it would interrupt, so a stale row only costs that check). `tag` is the doorbell's random token, part of
 * the text of its sleeping statement.
 */
const CREATE_DOORBELLS = `CREATE TABLE locking_doorbells (
     app_id VARCHAR(200) NOT NULL,
     connection_id BIGINT NOT NULL,
     tag VARCHAR(64) NOT NULL,
     opened DATETIME(6) NOT NULL,
     PRIMARY KEY (app_id)
   ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

/** `CREATE PROCEDURE name(p_stamp, p_app_id)` of a release, up to its `BEGIN`. @internal */
export const releaseSignature = (name: string): string => `CREATE PROCEDURE ${name}(
    IN p_stamp BIGINT,
    IN p_app_id VARCHAR(200) CHARACTER SET utf8mb4)
  MODIFIES SQL DATA
  SQL SECURITY INVOKER
BEGIN`;

/**
 * Into `v_doorbells`: the doorbells of other app ids whose live waiters wait for a name of grant `p_stamp` (read
 * before its lock rows go). @internal
 */
export const SELECT_GRANT_DOORBELLS = `SELECT GROUP_CONCAT(DISTINCT d.connection_id) INTO v_doorbells
      FROM locking k
      JOIN locking_waiters w ON w.lock_name = k.lock_name
      JOIN locking_doorbells d ON d.app_id = w.app_id
     WHERE k.stamp = p_stamp AND w.app_id <> p_app_id AND w.expires > UTC_TIMESTAMP(6);`;

/**
 * The transaction of a release, after its declarations (`v_doorbells` among them): the grant's log row ended; when it
 * matched, `released` (a statement), the doorbells read into `v_doorbells`, the lock rows deleted; the commit.
 * @internal
 */
export const releaseTransaction = (released: string): string => `DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  UPDATE locking_log SET status = 'RELEASED', ended = UTC_TIMESTAMP(6), version = version + 1
   WHERE stamp = p_stamp AND app_id = p_app_id AND status IN ${LIVE};
  IF ROW_COUNT() > 0 THEN
    ${released}
    ${SELECT_GRANT_DOORBELLS}
    DELETE FROM locking WHERE stamp = p_stamp;
  END IF;
  COMMIT;`;

/**
 * `CALL locking_release(stamp, app id)` → one row: `lock_names` (the JSON array of the grant's names; null when no
 * live grant of that app id has that stamp) and `doorbells` (the connection ids, comma-separated, of the doorbells of
 * other app ids whose live waiters wait for one of those names; null when none). The release itself is the first
 * version's, and the doorbells are read before its lock rows go (a plain read at READ COMMITTED: no row lock), from
 * those rows (by stamp) and the waiters' primary key (`lock_name` first): a release of names nobody waits for pays
 * one index probe per name. Put back by the hand-over's `down` (`mysql-lock-hand-over.sql.ts`).
 * @internal
 */
export const CREATE_RELEASE_V2 = `${releaseSignature('locking_release')}
  DECLARE v_names LONGTEXT CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_doorbells TEXT DEFAULT NULL;
  ${releaseTransaction('SELECT lock_names INTO v_names FROM locking_log WHERE stamp = p_stamp;')}
  SELECT v_names AS lock_names, v_doorbells AS doorbells;
END`;

/** The first version of `locking_release` (put back by `down`). */
const CREATE_RELEASE_V1 = CREATE_MYSQL_LOCK_PROCEDURES.filter((sql) => sql.includes('PROCEDURE locking_release('));

/**
 * Creates the table and the release's second version. DROP then CREATE (MySQL 8 has no CREATE OR REPLACE PROCEDURE):
 * a release that finds the procedure missing meanwhile sends its statements one by one.
 */
export const CREATE_MYSQL_LOCK_DOORBELLS: readonly string[] = [
  CREATE_DOORBELLS,
  'DROP PROCEDURE IF EXISTS locking_release',
  CREATE_RELEASE_V2,
];

/** Puts the first version of the release back and drops the table (waiters of other instances poll again). */
export const DROP_MYSQL_LOCK_DOORBELLS: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_release',
  ...CREATE_RELEASE_V1,
  'DROP TABLE IF EXISTS locking_doorbells',
];
