/**
 * The MySQL and MariaDB schema of nestjs-db-locks, as run by the first shipped migration on those databases (the later
 * migrations change the PostgreSQL functions only: on MySQL they have nothing to do). The same tables, columns and
 * meaning as on PostgreSQL, in InnoDB's types: arrays are JSON arrays, times are `DATETIME(6)` in UTC (every
 * statement writes `UTC_TIMESTAMP(6)`, so the session's time zone never matters), and the stamp comes from the log's
 * `AUTO_INCREMENT` (persisted across restarts since MySQL 8.0 and MariaDB 10.2.4: stamps never repeat). One table
 * more, `locking_names`: one row per lock name, which a grant locks in sorted order to serialise its names, where
 * PostgreSQL uses transaction advisory locks. Statements of the running engine are in `lib/store/mysql/mysql-lock.queries.sql.ts`.
 * @internal
 */

/**
 * Names compare byte for byte, as on PostgreSQL: MySQL's default collations would make `orders` and `ORDERS` one
 * lock.
 */
const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin';

/** Creates the tables (run by the first migration on MySQL and MariaDB). */
export const CREATE_MYSQL_LOCK_SCHEMA: readonly string[] = [
  `CREATE TABLE locking_names (
     lock_name VARCHAR(200) NOT NULL,
     PRIMARY KEY (lock_name)
   ) ${TABLE_OPTIONS}`,
  `CREATE TABLE locking (
     lock_name VARCHAR(200) NOT NULL,
     mode CHAR(1) NOT NULL,
     app_id VARCHAR(200) NOT NULL,
     stamp BIGINT NOT NULL,
     created DATETIME(6) NOT NULL,
     PRIMARY KEY (lock_name, mode, stamp),
     KEY locking_stamp_idx (stamp)
   ) ${TABLE_OPTIONS}`,
  `CREATE TABLE locking_log (
     stamp BIGINT NOT NULL AUTO_INCREMENT,
     app_id VARCHAR(200) NOT NULL,
     instance VARCHAR(200) NOT NULL,
     lock_names JSON NOT NULL,
     lock_modes JSON NOT NULL,
     status VARCHAR(16) NOT NULL,
     acquired DATETIME(6) NOT NULL,
     lease_expires DATETIME(6) NOT NULL,
     business_done DATETIME(6) NULL,
     ended DATETIME(6) NULL,
     version INT NOT NULL DEFAULT 1,
     ended_by VARCHAR(200) NULL,
     end_reason VARCHAR(500) NULL,
     PRIMARY KEY (stamp),
     KEY locking_log_acquired_idx (acquired),
     CONSTRAINT locking_log_status_ck
       CHECK (status IN ('ACQUIRED', 'BUSINESS_DONE', 'RELEASED', 'REAPED', 'RECOVERED', 'FORCED'))
   ) ${TABLE_OPTIONS}`,
  `CREATE TABLE locking_permissions (
     lock_name VARCHAR(200) NOT NULL,
     mode CHAR(1) NOT NULL,
     permits INT NOT NULL,
     PRIMARY KEY (lock_name, mode),
     CONSTRAINT locking_permissions_mode_ck CHECK (mode IN ('R', 'W')),
     CONSTRAINT locking_permissions_permits_ck CHECK (permits >= 1)
   ) ${TABLE_OPTIONS}`,
  `CREATE TABLE locking_waiters (
     lock_name VARCHAR(200) NOT NULL,
     waiter VARCHAR(64) NOT NULL,
     mode CHAR(1) NOT NULL,
     app_id VARCHAR(200) NOT NULL,
     expires DATETIME(6) NOT NULL,
     seq BIGINT NOT NULL AUTO_INCREMENT,
     registered DATETIME(6) NOT NULL,
     PRIMARY KEY (lock_name, waiter),
     KEY locking_waiters_waiter_idx (waiter),
     KEY locking_waiters_seq_idx (seq)
   ) ${TABLE_OPTIONS}`,
];

/** Drops them all, and every lock held in them. */
export const DROP_MYSQL_LOCK_SCHEMA: readonly string[] = [
  'DROP TABLE IF EXISTS locking_waiters',
  'DROP TABLE IF EXISTS locking_permissions',
  'DROP TABLE IF EXISTS locking_log',
  'DROP TABLE IF EXISTS locking',
  'DROP TABLE IF EXISTS locking_names',
];
