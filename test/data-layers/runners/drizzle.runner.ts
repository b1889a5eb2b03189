import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { eq, sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgTable } from 'drizzle-orm/pg-core';
import {
  type LockFenceStatement,
  LockModule,
  LockService,
  type LockTransactionRunner,
  type LockTransactionRunOptions,
  WithLocks,
} from 'nestjs-db-locks';

const loans = pgTable('loans', { id: integer('id').primaryKey(), balance: integer('balance').notNull() });
const repayments = pgTable('repayments', { loanId: integer('loan_id').notNull(), cents: integer('cents').notNull() });

/** The fence as Drizzle SQL: its text, each `?` bound to its value. */
const fenceSql = (s: LockFenceStatement) =>
  sql.join(s.positional.sql.split('?').map((text, i) => (i === 0 ? sql.raw(text) : sql`${s.positional.params[i - 1]}${sql.raw(text)}`)));

type Tx = Parameters<Parameters<NodePgDatabase['transaction']>[0]>[0];
type Isolation = NonNullable<Parameters<NodePgDatabase['transaction']>[1]>['isolationLevel'];

@Injectable()
export class DrizzleTransactions implements LockTransactionRunner<Tx> {
  readonly db = drizzle(process.env.DATABASE_URL ?? 'postgres://localhost/app');

  run<T>(work: (tx: Tx) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    return this.db.transaction(work, { isolationLevel: options.isolation?.toLowerCase() as Isolation });
  }

  execute(tx: Tx, s: LockFenceStatement): Promise<unknown> {
    return tx.execute(fenceSql(s));
  }
}

@Injectable()
export class Repayments {
  constructor(private readonly locks: LockService) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], waitMs: 2000, transaction: { runner: DrizzleTransactions } })
  async repay(id: number, cents: number): Promise<void> {
    const tx = this.locks.currentTransaction(DrizzleTransactions);
    const [loan] = await tx.select({ balance: loans.balance }).from(loans).where(eq(loans.id, id));
    await tx.update(loans).set({ balance: loan!.balance - cents }).where(eq(loans.id, id));
    await tx.insert(repayments).values({ loanId: id, cents });
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'api-1', url: process.env.DATABASE_URL ?? 'postgres://localhost/app' })],
  providers: [DrizzleTransactions, Repayments],
})
export class AppModule {}
