import { PROCEDURES_RECHECK_MS } from './mysql-acquisitions.js';
import { isMissingMysqlColumn } from './mysql-error.util.js';
import {
  CLAIM_HANDED_GRANT,
  DELETE_WAITER,
  deleteHandedWaitersOf,
  deleteLocksOf,
  endGrants,
  selectNamesOf,
  UNMARK_HANDED_WAITER,
} from './mysql-lock.queries.sql.js';
import type { MysqlStatementRunner, MysqlTransaction } from './mysql-statement.runner.js';

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

/** Grants handed to this process's waiters that `MysqlHandedGrants` remembers at most (then it forgets them all). */
const MAX_HANDED = 10_000;

/** What a waiter's claim of a grant handed to it did. */
export interface MysqlClaim {
  /** The grant claimed (its lease now counted from the claim), or 0. */
  readonly stamp: number;
  /** The names freed when the grant's lease had ended (it was ended here, REAPED), for this process's waiters. */
  readonly freed: readonly string[];
}

/**
 * The grants releases handed to this process's waiters, as its listener reported them (the release's answer in this
 * process, or its poll), until the waiter takes, claims or leaves them. A wait that cannot count the lease of a grant
 * handed to it (paused past it, or its last refresh too old) makes its next attempt at once: that attempt claims the
 * grant with a lease counted from itself, or, when the grant's lease has ended, ends it (REAPED) and lets the waiter's
 * rows wait again in their place, then checks as any attempt (PostgreSQL's attempt does the same in its statement).
 * Without the claim, such a waiter was refused until the grant was reaped, and lost its place with it (a CI run of
 * `leader-resign.spec.ts` on MariaDB: the replica paused with the process did not lead within 15 s).
 * @internal
 */
export class MysqlHandedGrants {
  private readonly byWaiter = new Map<string, number>();
  private readonly byStamp = new Map<number, string>();

  constructor(
    private readonly runner: MysqlStatementRunner,
    private readonly appId: string,
    private readonly waiterTtlMs: number,
  ) {}

  /** A release handed `stamp` to `waiter`, of this process. */
  handed(waiter: string, stamp: number): void {
    if (this.byWaiter.get(waiter) === stamp) return;
    if (this.byWaiter.size >= MAX_HANDED) this.forgetAll();
    this.forgetWaiter(waiter);
    this.byWaiter.set(waiter, stamp);
    this.byStamp.set(stamp, waiter);
  }

  /** The waiter left (its rows were removed, with the grant handed to it). */
  forgetWaiter(waiter: string): void {
    const stamp = this.byWaiter.get(waiter);
    if (stamp === undefined) return;
    this.byWaiter.delete(waiter);
    this.byStamp.delete(stamp);
  }

  /** The grants ended (released, reaped, forced) or were taken. */
  forgetStamps(stamps: Iterable<number>): void {
    for (const stamp of stamps) {
      const waiter = this.byStamp.get(stamp);
      if (waiter === undefined) continue;
      this.byStamp.delete(stamp);
      this.byWaiter.delete(waiter);
    }
  }

  forgetAll(): void {
    this.byWaiter.clear();
    this.byStamp.clear();
  }

  /**
   * The attempt of `waiter`, before its check: the grant handed to it claimed with a lease of `leaseMs` from now, or
   * ended if its lease has ended (see above); undefined when nothing was handed to it.
   */
  async claim(waiter: string, leaseMs: number): Promise<MysqlClaim | undefined> {
    const stamp = this.byWaiter.get(waiter);
    if (stamp === undefined) return undefined;
    this.forgetWaiter(waiter);
    return this.runner.transaction('tryLocks', true, async (tx) => {
      const { affectedRows } = await tx.write(CLAIM_HANDED_GRANT, [leaseMs, stamp, this.appId]);
      if (affectedRows === 1) {
        await tx.write(DELETE_WAITER, [waiter]);
        return { stamp, freed: [] };
      }
      const ended = await tx.write(endGrants('REAPED', 1), [stamp]);
      const freed = ended.affectedRows === 0 ? [] : await tx.select<{ lock_name: string }>(selectNamesOf(1), [stamp]);
      if (freed.length > 0) await tx.write(deleteLocksOf(1), [stamp]);
      await tx.write(UNMARK_HANDED_WAITER, [this.waiterTtlMs, waiter, stamp]);
      return { stamp: 0, freed: freed.map((row) => row.lock_name) };
    });
  }
}
