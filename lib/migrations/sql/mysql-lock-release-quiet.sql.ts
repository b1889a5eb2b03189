/**
 * The quiet release of MySQL and MariaDB, created by the migration `MysqlQuietRelease1797000000000` (issue 41): a
 * release for a client that knows the names of the grant it releases (it made the grant), so that the release need
 * not read them back, and that answers without a result set when it has nothing else to say. `locking_release` (the
 * doorbells' version, `mysql-lock-doorbells.sql.ts`) stays as it is: the client still calls it for a stamp whose names
 * it does not know, and instances of the previous version call it.
 * @internal
 */
import { releaseSignature, releaseTransaction } from './mysql-lock-doorbells.sql.js';

/**
 * `CALL locking_release_quiet(stamp, app id)`: the release of `locking_release` (the log row ended, the doorbells of
 * the other app ids' live waiters on the grant's names read, its lock rows deleted, one commit), without reading the
 * grant's names. It answers one row, `released` (1, or 0 when no live grant of that app id has that stamp) and
 * `doorbells` (as `locking_release`), only when there are doorbells to ring, or on MySQL; otherwise no result set, and
 * the OK packet of the `CALL` says it: on MariaDB its affected rows are those of the whole call (the log row's update,
 * the doorbells' read, the lock rows' delete; 0 when nothing matched, since nothing else runs then), while MySQL
 * documents those of the last statement (here the `COMMIT`). A one-row result set costs the server about 80 µs of a
 * W1 cycle on MariaDB (docs/benchmark.md, issue 30).
 */
const CREATE_QUIET_RELEASE = `${releaseSignature('locking_release_quiet')}
  DECLARE v_released TINYINT DEFAULT 0;
  DECLARE v_doorbells TEXT DEFAULT NULL;
  ${releaseTransaction('SET v_released = 1;')}
  IF v_doorbells IS NOT NULL OR VERSION() NOT LIKE '%MariaDB%' THEN
    SELECT v_released AS released, v_doorbells AS doorbells;
  END IF;
END`;

/** Creates the quiet release (dropped first: a rerun after a failed `down`). */
export const CREATE_MYSQL_QUIET_RELEASE: readonly string[] = [
  'DROP PROCEDURE IF EXISTS locking_release_quiet',
  CREATE_QUIET_RELEASE,
];

/** Drops it: every release calls `locking_release` again, which the migration left as it was. */
export const DROP_MYSQL_QUIET_RELEASE: readonly string[] = ['DROP PROCEDURE IF EXISTS locking_release_quiet'];
