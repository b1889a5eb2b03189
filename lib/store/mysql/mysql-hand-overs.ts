import { PROCEDURES_RECHECK_MS } from './mysql-acquisitions.js';
import { isMissingMysqlColumn } from './mysql-error.util.js';
import { deleteHandedWaitersOf } from './mysql-lock.queries.sql.js';
import type { MysqlTransaction } from './mysql-statement.runner.js';

/** What a release answers of a hand-over (`mysql-lock-hand-over.sql.ts`); absent before that migration. @internal */
export interface MysqlHandedRow {
  handed?: number | string | null;
  handed_waiter?: string | null;
  handed_app?: string | null;
  handed_mode?: string | null;
  rows_end?: number | string | null;
}

/**
 * Whether the database has the hand-over's waiter columns (migration `LockHandOver1797300000000`), learnt from the
 * statements that use them: where they are missing (a database not migrated yet), the previous statements serve, and
 * the columns are looked for again after `PROCEDURES_RECHECK_MS`.
 * @internal
 */
export class MysqlHandOvers {
  private missingUntil = 0;

  /** Runs `call`, which uses the columns; undefined when they are missing (nothing ran). */
  async with<T>(call: () => Promise<T>): Promise<T | undefined> {
    if (performance.now() < this.missingUntil) return undefined;
    try {
      return await call();
    } catch (error) {
      if (!isMissingMysqlColumn(error)) throw error;
      this.missingUntil = performance.now() + PROCEDURES_RECHECK_MS;
      return undefined;
    }
  }
}

/**
 * In `tx`, removes the rows of the waiters that grants `stamps` were handed to, for grants that end otherwise than by
 * their release (reaped, forced): a release removes them itself. Nothing to do on a database before the hand-over's
 * columns (the statement fails alone there, and the transaction goes on).
 * @internal
 */
export async function deleteHandedWaiters(tx: MysqlTransaction, stamps: readonly number[]): Promise<void> {
  if (stamps.length === 0) return;
  await tx.write(deleteHandedWaitersOf(stamps.length), stamps).catch((error: unknown) => {
    if (!isMissingMysqlColumn(error)) throw error;
  });
}
