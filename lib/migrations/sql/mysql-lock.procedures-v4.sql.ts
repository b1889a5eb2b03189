/**
 * The fourth version of the MySQL and MariaDB acquisition procedures, with the columns it needs, created by the
 * migration `MysqlCertifiedWrites1797200000000` (issue 49): the third version's text
 * (`mysql-lock.procedures-v3.sql.ts`), where a grant **writes** its names' rows instead of writing them back unchanged.
 *
 * On one server both lock the row until the grant commits. On a Galera cluster (MariaDB Galera, Percona XtraDB
 * Cluster) only what a transaction writes is certified across the nodes: row locks are the node's own, and a row
 * written back unchanged is not written at all. Two grants of one name on two nodes then never met, and both were
 * granted. Counted in `locking_names.grants`, every grant of a name writes its row, two such grants conflict at
 * certification, and the one certified second is rolled back by the cluster (errno 1213) and run again by the library.
 * @internal
 */
import { acquisitionProcedures } from './mysql-lock.procedures-v2.sql.js';
import { CREATE_MYSQL_LOCK_PROCEDURES_V3, DROP_ACQUISITION_PROCEDURES, WAITERS_IN_ORDER } from './mysql-lock.procedures-v3.sql.js';

/** What a grant writes into its names' existing rows: one more grant. */
export const COUNT_NAME_GRANT = 'grants = locking_names.grants + 1';

/**
 * The columns of the version: the grants of each name (the write above), and the lease of the app id's claim on a
 * Galera cluster (`GET_LOCK` holds on one node only): who holds it (a token of the claiming session), on which node,
 * until when. Added with defaults, in place (no table copy on MariaDB 10.3+ and MySQL 8.0).
 */
const ADD_COLUMNS: readonly string[] = [
  'ALTER TABLE locking_names ADD COLUMN grants BIGINT NOT NULL DEFAULT 0',
  `ALTER TABLE locking_instances
     ADD COLUMN lease_holder VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
     ADD COLUMN lease_node VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
     ADD COLUMN lease_until DATETIME(6) NULL`,
];

/**
 * The doorbells' rings across the nodes of a Galera cluster: one row per app id whose doorbell is open, which that
 * doorbell's session keeps locked while it sleeps. A release on another node rings it by writing the row
 * (`rings + 1`); when the write reaches the doorbell's node, the cluster aborts the transaction holding the row's lock
 * (a brute-force abort), which ends the sleep at once. (`KILL QUERY` reaches threads of its own node only.)
 */
const CREATE_RINGS = `CREATE TABLE locking_doorbell_rings (
     app_id VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
     rings BIGINT NOT NULL DEFAULT 0) ENGINE = InnoDB`;

/** The columns and the rings' table, dropped (`down`). */
const DROP_COLUMNS: readonly string[] = [
  'DROP TABLE IF EXISTS locking_doorbell_rings',
  'ALTER TABLE locking_names DROP COLUMN grants',
  'ALTER TABLE locking_instances DROP COLUMN lease_holder, DROP COLUMN lease_node, DROP COLUMN lease_until',
];

/**
 * Installs the fourth version: the columns first, so that the statements a grant sends while a procedure is replaced
 * (`lockNames`) find them.
 */
export const CREATE_MYSQL_LOCK_PROCEDURES_V4: readonly string[] = [
  ...ADD_COLUMNS,
  CREATE_RINGS,
  ...DROP_ACQUISITION_PROCEDURES,
  ...acquisitionProcedures(WAITERS_IN_ORDER, COUNT_NAME_GRANT),
];

/** Puts the third version back, then drops the columns (`down`). */
export const DROP_MYSQL_LOCK_PROCEDURES_V4: readonly string[] = [
  ...CREATE_MYSQL_LOCK_PROCEDURES_V3,
  ...DROP_COLUMNS,
];
