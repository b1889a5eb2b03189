/**
 * The hand-over of MySQL and MariaDB (issue 51: a hot name), installed by the migration `LockHandOver1797300000000`:
 * a release that frees a name hands it to the name's first waiter within its own commit, as on PostgreSQL
 * (docs/design.md, "A hot name"). Waiter rows get the columns it needs; `locking_release` (third version) and
 * `locking_release_quiet` (second version) hand over; `down` puts their previous versions back and drops the columns.
 * @internal
 */
import { LIVE } from '../../store/lock-sql.constants.js';
import { CREATE_RELEASE_V2, releaseSignature, SELECT_GRANT_DOORBELLS } from './mysql-lock-doorbells.sql.js';
import { CREATE_MYSQL_QUIET_RELEASE } from './mysql-lock-release-quiet.sql.js';

/**
 * The waiter rows' columns of a hand-over: the waiter's `instance` (the grant's log row names it), `handover` (set only
 * by instances that take a hand-over: an older instance's waiters are never handed a grant, so a fleet can be upgraded
 * one instance at a time), and `granted`, the stamp handed over (indexed: the release of that grant removes the rows).
 * Added in place (no table copy on MariaDB 10.3+ and MySQL 8.0).
 */
const ADD_WAITER_COLUMNS = `ALTER TABLE locking_waiters
     ADD COLUMN instance VARCHAR(200) NULL,
     ADD COLUMN handover TINYINT NOT NULL DEFAULT 0,
     ADD COLUMN granted BIGINT NULL,
     ADD KEY locking_waiters_granted_idx (granted)`;

const DROP_WAITER_COLUMNS = `ALTER TABLE locking_waiters
     DROP KEY locking_waiters_granted_idx,
     DROP COLUMN granted,
     DROP COLUMN handover,
     DROP COLUMN instance`;

/** The variables of `HAND_OVER`. */
const HAND_OVER_VARIABLES = `DECLARE v_now DATETIME(6) DEFAULT UTC_TIMESTAMP(6);
  DECLARE v_rows INT DEFAULT 0;
  DECLARE v_waited INT DEFAULT 0;
  DECLARE v_left INT DEFAULT 1;
  DECLARE v_count INT DEFAULT 0;
  DECLARE v_handover INT DEFAULT 0;
  DECLARE v_live INT DEFAULT 0;
  DECLARE v_name VARCHAR(200) CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_waiter VARCHAR(64) CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_app VARCHAR(200) CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_instance VARCHAR(200) CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_expires DATETIME(6) DEFAULT NULL;
  DECLARE v_handed BIGINT DEFAULT 0;
  DECLARE v_handed_waiter VARCHAR(64) CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_handed_app VARCHAR(200) CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_handed_mode CHAR(1) CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_rows_end BIGINT DEFAULT NULL;`;

/** The name as the tables compare it: byte for byte (a variable's collation is its character set's default). */
const NAME = 'v_name COLLATE utf8mb4_bin';

/**
 * ONE_NAME_HAND_OVER, after the release ended the grant's log row (statements; sets `v_doorbells` and `v_handed…`).
 * A release of names nobody waits for (no waiter row) reads its lock rows once and deletes them, as before (that read
 * replaces the doorbells' read). Otherwise: the doorbells to ring are read, the grant's lock rows go, and the rows of
 * a waiter that this grant was handed to. When the grant held one name and
 * nobody else holds it, the release takes the name's row lock in `locking_names` (the per-name mutex every grant
 * takes, counting a grant there as they do) and looks again under it: a grant in flight that shares the name (a
 * reader beside a reader being released) has committed by then and is seen. If the name is still free, its earliest
 * live waiter (by `seq`) is handed it for writing, if that waiter waits to write that name alone, has `handover`,
 * and has not been handed a grant: its rows are read and locked in one statement and checked under that lock, then
 * the log row (the waiter's app id and instance; acquired when the released grant ended, one instant; its lease ends
 * when the waiter's rows do, the waiter's own promise to be alive), the lock row, and the rows marked `granted` with `expires` set to now (they hold nobody back any
 * more). Anything else (an earlier waiter of a group, of an older instance, or a reader: several readers could share
 * the name, and a reader's own attempt could take it beside the grant handed to it) hands nothing over, and the
 * waiters are woken as before.
 *
 * Why the waiter's own attempt never takes the name beside the grant handed to it: it checks on committed rows, which
 * show the name held for writing by the grant being released until the release commits, and by the one handed to it
 * after. The stamp comes from the log's `AUTO_INCREMENT` under the name's row lock, so tokens stay in grant order.
 * Lock order: the name's row, then the waiter's rows, as an acquisition that grants a waiter takes them.
 *
 * The doorbells to ring (other app ids' live waiters of the grant's names) are read before the lock rows go; a write
 * handed over rings only the doorbell of the waiter's app id, when it is not the releaser's (the
 * other waiters have nothing to try until its holder releases).
 */
const HAND_OVER = `SELECT COUNT(*), MIN(k.lock_name),
           MAX(EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = k.lock_name))
      INTO v_rows, v_name, v_waited FROM locking k WHERE k.stamp = p_stamp;
    IF v_waited = 1 THEN
      ${SELECT_GRANT_DOORBELLS}
    END IF;
    DELETE FROM locking WHERE stamp = p_stamp;
    IF v_waited = 1 THEN
      DELETE FROM locking_waiters WHERE granted = p_stamp;
      IF v_rows = 1 THEN
        INSERT INTO locking_names (lock_name) VALUES (${NAME}) ON DUPLICATE KEY UPDATE grants = locking_names.grants + 1;
        SELECT (SELECT COUNT(*) FROM locking k WHERE k.lock_name = ${NAME}),
               (SELECT w.waiter FROM locking_waiters w
                 WHERE w.lock_name = ${NAME} AND w.expires > UTC_TIMESTAMP(6)
                 ORDER BY w.seq LIMIT 1)
          INTO v_left, v_waiter;
      END IF;
      IF v_left = 0 AND v_waiter IS NOT NULL THEN
        SELECT COUNT(*), MAX(w.handover), MIN(w.granted IS NULL AND w.expires > UTC_TIMESTAMP(6) AND w.mode = 'W'),
               MAX(w.app_id), MAX(w.instance), MAX(w.expires)
          INTO v_count, v_handover, v_live, v_app, v_instance, v_expires
          FROM locking_waiters w WHERE w.waiter = v_waiter COLLATE utf8mb4_bin FOR UPDATE;
        IF v_count = 1 AND v_handover = 1 AND v_live = 1 THEN
          INSERT INTO locking_log (app_id, instance, lock_names, lock_modes, status, acquired, lease_expires)
            VALUES (v_app, COALESCE(v_instance, v_app), JSON_ARRAY(${NAME}), JSON_ARRAY('W'), 'ACQUIRED',
                    v_now, v_expires);
          SET v_handed = LAST_INSERT_ID();
          INSERT INTO locking (lock_name, mode, app_id, stamp, created)
            VALUES (${NAME}, 'W', v_app, v_handed, v_now);
          UPDATE locking_waiters SET granted = v_handed, expires = v_now
           WHERE waiter = v_waiter COLLATE utf8mb4_bin;
          SET v_handed_waiter = v_waiter;
          SET v_handed_app = v_app;
          SET v_handed_mode = 'W';
          SET v_rows_end = TIMESTAMPDIFF(MICROSECOND, '1970-01-01', v_expires) DIV 1000;
          SET v_doorbells = NULL;
          IF v_app <> p_app_id THEN
            SELECT GROUP_CONCAT(d.connection_id) INTO v_doorbells
              FROM locking_doorbells d WHERE d.app_id = v_app COLLATE utf8mb4_bin;
          END IF;
        END IF;
      END IF;
    END IF;`;

/** The release's transaction with the hand-over; `released` runs first once the log row is ended. */
const releaseHandingOver = (released: string): string => `DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SET v_now = UTC_TIMESTAMP(6);
  UPDATE locking_log SET status = 'RELEASED', ended = v_now, version = version + 1
   WHERE stamp = p_stamp AND app_id = p_app_id AND status IN ${LIVE};
  IF ROW_COUNT() > 0 THEN
    ${released}
    ${HAND_OVER}
  END IF;
  COMMIT;`;

/** What both releases answer of a hand-over: the stamp (0: none), its waiter, app id and mode, and the rows' end (epoch ms). */
const HANDED_COLUMNS = `v_handed AS handed, v_handed_waiter AS handed_waiter, v_handed_app AS handed_app,
    v_handed_mode AS handed_mode, v_rows_end AS rows_end`;

/**
 * `CALL locking_release(stamp, app id)` → one row: `lock_names`, `doorbells` (as the second version) and the
 * hand-over's columns (`handed` 0: none).
 */
const CREATE_RELEASE_V3 = `${releaseSignature('locking_release')}
  DECLARE v_names LONGTEXT CHARACTER SET utf8mb4 DEFAULT NULL;
  DECLARE v_doorbells TEXT DEFAULT NULL;
  ${HAND_OVER_VARIABLES}
  ${releaseHandingOver('SELECT lock_names INTO v_names FROM locking_log WHERE stamp = p_stamp;')}
  SELECT v_names AS lock_names, v_doorbells AS doorbells, ${HANDED_COLUMNS};
END`;

/**
 * `CALL locking_release_quiet(stamp, app id)`: the release of a grant whose names the caller knows, answering as the
 * first version (no result set when there is nothing to tell), and one row, `released`, `doorbells` and the
 * hand-over's columns, when it rang or handed over (always on MySQL).
 */
const CREATE_QUIET_RELEASE_V2 = `${releaseSignature('locking_release_quiet')}
  DECLARE v_released TINYINT DEFAULT 0;
  DECLARE v_doorbells TEXT DEFAULT NULL;
  ${HAND_OVER_VARIABLES}
  ${releaseHandingOver('SET v_released = 1;')}
  IF v_doorbells IS NOT NULL OR v_handed > 0 OR VERSION() NOT LIKE '%MariaDB%' THEN
    SELECT v_released AS released, v_doorbells AS doorbells, ${HANDED_COLUMNS};
  END IF;
END`;

/** The waiters' columns (an instance registers its waiters with them as soon as they exist). */
export const ADD_MYSQL_HAND_OVER_COLUMNS: readonly string[] = [ADD_WAITER_COLUMNS];

/**
 * The releases that hand over, installed last, once the acquisitions refuse a waiter handed a grant (DROP then
 * CREATE: a release that finds one missing meanwhile calls the other, or sends statements).
 */
export const CREATE_MYSQL_HAND_OVER_RELEASES: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_release',
  CREATE_RELEASE_V3,
  'DROP PROCEDURE IF EXISTS locking_release_quiet',
  CREATE_QUIET_RELEASE_V2,
];

/** Puts the previous releases back (`down`, first). */
export const DROP_MYSQL_HAND_OVER_RELEASES: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_release',
  CREATE_RELEASE_V2,
  ...CREATE_MYSQL_QUIET_RELEASE,
];

/** Drops the waiters' columns (`down`, last). */
export const DROP_MYSQL_HAND_OVER_COLUMNS: readonly string[] = [DROP_WAITER_COLUMNS];
