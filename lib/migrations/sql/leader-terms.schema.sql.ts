/**
 * The terms of leader election (both dialects): one row per role, with the term of its latest election (the fencing
 * token, which only grows), the stamp of the grant that won it, and who won it when. A row is never deleted: the term
 * survives the restarts of every replica and of the database. Created by `LeaderTerms1796900000000`.
 * @internal
 */

/** PostgreSQL, up. */
export const CREATE_POSTGRES_LEADER_TERMS: readonly string[] = [
  `CREATE TABLE locking_leaders (
     role      varchar(200) PRIMARY KEY,
     term      bigint       NOT NULL,
     stamp     bigint       NOT NULL,
     app_id    varchar(200) NOT NULL,
     instance  varchar(200) NOT NULL,
     elected   timestamptz  NOT NULL,
     CONSTRAINT locking_leaders_term_ck CHECK (term >= 1)
   )`,
];

/** PostgreSQL, down. */
export const DROP_POSTGRES_LEADER_TERMS: readonly string[] = ['DROP TABLE IF EXISTS locking_leaders'];

/** MySQL and MariaDB, up (names byte-exact, as the other lock tables). */
export const CREATE_MYSQL_LEADER_TERMS: readonly string[] = [
  `CREATE TABLE locking_leaders (
     role VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
     term BIGINT NOT NULL,
     stamp BIGINT NOT NULL,
     app_id VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
     instance VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
     elected DATETIME(6) NOT NULL) ENGINE = InnoDB`,
];

/** MySQL and MariaDB, down. */
export const DROP_MYSQL_LEADER_TERMS: readonly string[] = ['DROP TABLE IF EXISTS locking_leaders'];
