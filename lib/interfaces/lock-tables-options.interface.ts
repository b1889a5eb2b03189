/**
 * Where the lock tables and functions live, when not where the DataSource finds them by default. Give the same value
 * to `LockModule.forRoot()`, `lockMigrations()`, `lockEntities()`, `LockAdminService.create()` and the command line
 * (`--schema` / `--table-prefix`). Modules with different values in one database never see each other's locks. See
 * `docs/schema-option.md`.
 * @publicApi
 */
export interface LockTablesOptions {
  /**
   * PostgreSQL: the schema of the lock tables and functions (created by the first migration when missing), 1–47
   * lowercase letters, digits and `_`, not `public` nor `pg_…`. Names are qualified with it, so the `search_path` does
   * not matter.
   * @default none: the tables are wherever the `search_path` puts them (usually `public`), as before this option
   */
  readonly schema?: string;
  /**
   * MySQL and MariaDB: a prefix of the lock tables and procedures (`app1_` gives `app1_locking`, `app1_locking_log`,
   * …), 1–32 lowercase letters, digits and `_`, starting with a letter.
   * @default none: `locking`, `locking_log`, …
   */
  readonly tablePrefix?: string;
}
