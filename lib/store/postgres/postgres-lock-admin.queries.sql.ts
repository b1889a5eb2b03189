/**
 * Statements of the admin actions (`LockAdminService`), parameterised. They act on every app's rows, never on behalf
 * of one. The grants, log and permits statements they share with the engine are in `postgres-lock.queries.sql.ts`.
 * @internal
 */

/** $1 stamp, $2 actor, $3 reason → the grant freed (one row), or no row when no live grant has that stamp. */
export const FORCE_RELEASE = `SELECT app_id, instance, lock_names, lock_modes, held_for_ms
  FROM locking_force_release($1, $2, $3)`;

/**
 * $1 a name (null: any) → the waiters whose registration has not expired and that wait for that name, one row each,
 * in waiting order, with their place in it among those returned (1, 2, …) and their ages computed by the database.
 */
export const SELECT_WAITERS = `SELECT waiter, min(app_id) AS app_id,
    array_agg(lock_name ORDER BY lock_name) AS lock_names, array_agg(mode ORDER BY lock_name) AS lock_modes,
    row_number() OVER (ORDER BY min(seq)) AS position,
    (extract(epoch FROM clock_timestamp() - min(registered)) * 1000)::float8 AS waiting_for_ms,
    (extract(epoch FROM min(expires) - clock_timestamp()) * 1000)::float8 AS expires_in_ms
  FROM locking_waiters
 WHERE expires > clock_timestamp()
 GROUP BY waiter
HAVING $1::text IS NULL OR bool_or(lock_name = $1)
 ORDER BY position`;

/** $1 the migrations table (possibly schema-qualified, quoted) → whether it and each lock table exist. */
export const SELECT_TABLES_PRESENT = `SELECT to_regclass($1) IS NOT NULL AS migrations_table,
    to_regclass('locking') IS NOT NULL AND to_regclass('locking_log') IS NOT NULL
      AND to_regclass('locking_permissions') IS NOT NULL AND to_regclass('locking_waiters') IS NOT NULL AS lock_tables`;

/** The names recorded in TypeORM's migrations table `table` (an identifier quoted by the caller), in order. */
export const selectMigrationNames = (table: string): string => `SELECT name FROM ${table} ORDER BY id`;

/**
 * Every schema of the database that has the core lock tables (`locking`, `locking_log`, `locking_permissions`), and
 * whether it is the one the `search_path` finds (the default place). Looks across places: never rewritten by
 * `inLockTables`. Used by the command line to say where the lock tables are when the chosen place has none.
 */
export const SELECT_LOCK_PLACES = `SELECT n.nspname AS place,
    COALESCE(n.oid = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('locking')), false) AS is_default
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relname IN ('locking', 'locking_log', 'locking_permissions') AND c.relkind IN ('r', 'p')
 GROUP BY n.oid, n.nspname
HAVING count(*) = 3
 ORDER BY n.nspname`;
