import { Injectable } from '@nestjs/common';
import { eq, sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgTable } from 'drizzle-orm/pg-core';
import { LockFence, type LockFenceStatement, LockService, type LockTransactionRunner } from 'nestjs-db-locks';

const loans = pgTable('loans', { id: integer('id').primaryKey(), balance: integer('balance').notNull() });
const repayments = pgTable('repayments', { loanId: integer('loan_id').notNull(), cents: integer('cents').notNull() });

/** The fence as Drizzle SQL: its text, each `?` bound to its value. */
const fenceSql = (s: LockFenceStatement) =>
  sql.join(s.positional.sql.split('?').map((text, i) => (i === 0 ? sql.raw(text) : sql`${s.positional.params[i - 1]}${sql.raw(text)}`)));

type Tx = Parameters<Parameters<NodePgDatabase['transaction']>[0]>[0];

@Injectable()
export class Repayments {
  private readonly db = drizzle(process.env.DATABASE_URL ?? 'postgres://localhost/app');

  /** Drizzle's transactions, for LockFence: it runs the work in one, then sends the fence last in its `tx`. */
  private readonly transactions: LockTransactionRunner<Tx> = {
    run: (work) => this.db.transaction(work),
    execute: (tx, s) => tx.execute(fenceSql(s)),
  };

  constructor(
    private readonly locks: LockService,
    private readonly fence: LockFence,
  ) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  async repay(id: number, cents: number): Promise<boolean> {
    const stamp = await this.locks.tryLocks([`loan:${id}_WRITE`], { waitMs: 2000 });
    if (stamp === 0) return false;
    try {
      await this.fence.transaction(stamp, this.transactions, async (tx) => {
        const [loan] = await tx.select({ balance: loans.balance }).from(loans).where(eq(loans.id, id));
        await tx.update(loans).set({ balance: loan!.balance - cents }).where(eq(loans.id, id));
        await tx.insert(repayments).values({ loanId: id, cents });
      }); // the fence follows the work, in the same tx; then COMMIT
      return true;
    } finally {
      await this.locks.releaseLocks(stamp);
    }
  }
}
