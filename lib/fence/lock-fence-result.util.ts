import { InvalidLockArgumentError } from '../errors/index.js';
import type { LockDialect } from '../store/lock-dialect.util.js';

/** What a data layer may return for a statement: a count, rows, or a result object. */
interface FenceResult {
  readonly rowCount?: unknown;
  readonly rows?: unknown;
  readonly affectedRows?: unknown;
  readonly numAffectedRows?: unknown;
}

/**
 * Whether the fence's result shows the grant fenced: one row returned (PostgreSQL) or affected (MySQL/MariaDB), as
 * `pg` (`rowCount`), `mysql2` (`[{ affectedRows }]`), Kysely (`rows`, `numAffectedRows`), Knex's `raw`, Drizzle's
 * `execute` and Prisma's `$executeRawUnsafe` (a count) return it.
 * @throws InvalidLockArgumentError for a result of none of these shapes.
 * @internal
 */
export function isFenced(dialect: LockDialect, result: unknown): boolean {
  if (typeof result === 'number' || typeof result === 'bigint') return Number(result) === 1;
  if (Array.isArray(result)) {
    if (dialect === 'postgres') return result.length === 1; // the rows
    return isFenced(dialect, result[0]); // mysql2's [ResultSetHeader, fields]
  }
  const value = (result ?? {}) as FenceResult;
  const count =
    dialect === 'postgres'
      ? (value.rowCount ?? (Array.isArray(value.rows) ? value.rows.length : undefined))
      : (value.affectedRows ?? value.numAffectedRows);
  if (typeof count === 'number' || typeof count === 'bigint') return Number(count) === 1;
  throw new InvalidLockArgumentError(
    'result of the fence statement',
    typeof result,
    "what the data layer's query returns (pg's result, mysql2's [header], Kysely's { rows, numAffectedRows }, a count)",
  );
}
