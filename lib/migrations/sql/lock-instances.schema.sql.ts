/**
 * The instances table (both dialects): one row per `appId`, written by the process that holds the app id, naming it
 * precisely enough that its successor can tell, on the same machine, whether it is gone (see `processKey`). Start-up
 * recovery frees a previous life's grants at once only when that life is provably over.
 * @internal
 */

/** PostgreSQL, up. */
export const CREATE_POSTGRES_INSTANCES: readonly string[] = [
  `CREATE TABLE locking_instances (
     app_id varchar(200) PRIMARY KEY,
     instance varchar(200) NOT NULL,
     process_key varchar(300),
     claimed timestamptz NOT NULL DEFAULT now())`,
];

/** PostgreSQL, down. */
export const DROP_POSTGRES_INSTANCES: readonly string[] = ['DROP TABLE IF EXISTS locking_instances'];

/** MySQL and MariaDB, up (names byte-exact, as the other lock tables). */
export const CREATE_MYSQL_INSTANCES: readonly string[] = [
  `CREATE TABLE locking_instances (
     app_id VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
     instance VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
     process_key VARCHAR(300) CHARACTER SET ascii COLLATE ascii_bin NULL,
     claimed DATETIME(6) NOT NULL) ENGINE = InnoDB`,
];

/** MySQL and MariaDB, down. */
export const DROP_MYSQL_INSTANCES: readonly string[] = ['DROP TABLE IF EXISTS locking_instances'];
