import {
  Body, Controller, Injectable, Module, NotFoundException, type OnModuleDestroy, Param, ParseIntPipe, Post,
} from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { eq, sql } from 'drizzle-orm';
import { int, mysqlTable, type MySqlTransactionConfig } from 'drizzle-orm/mysql-core';
import { drizzle, type MySql2Database } from 'drizzle-orm/mysql2';
import mysql from 'mysql2/promise';
import {
  type LockFenceStatement,
  type LockTransactionIsolation,
  LockModule,
  LockService,
  type LockTransactionRunner,
  type LockTransactionRunOptions,
  WithLocks,
} from 'nestjs-db-locks';

const loans = mysqlTable('loans', { id: int('id').primaryKey(), balance: int('balance').notNull() });
const repayments = mysqlTable('repayments', { loanId: int('loan_id').notNull(), cents: int('cents').notNull() });

/** The fence as Drizzle SQL: its text, each `?` bound to its value. */
const fenceSql = (s: LockFenceStatement) =>
  sql.join(s.positional.sql.split('?').map((text, i) => (i === 0 ? sql.raw(text) : sql`${s.positional.params[i - 1]}${sql.raw(text)}`)));

type Tx = Parameters<Parameters<MySql2Database['transaction']>[0]>[0];

/** `transaction.isolation` as Drizzle's MySQL transactions name it. */
const ISOLATION: Record<LockTransactionIsolation, MySqlTransactionConfig['isolationLevel']> = {
  'READ UNCOMMITTED': 'read uncommitted',
  'READ COMMITTED': 'read committed',
  'REPEATABLE READ': 'repeatable read',
  SERIALIZABLE: 'serializable',
};

@Injectable()
export class DrizzleMysqlTransactions implements LockTransactionRunner<Tx>, OnModuleDestroy {
  readonly pool = mysql.createPool(process.env.DATABASE_URL ?? 'mysql://localhost/app');
  readonly db: MySql2Database = drizzle({ client: this.pool });

  run<T>(work: (tx: Tx) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    return this.db.transaction(work, options.isolation ? { isolationLevel: ISOLATION[options.isolation] } : undefined);
  }

  execute(tx: Tx, s: LockFenceStatement): Promise<unknown> {
    return tx.execute(fenceSql(s));
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}

/** A loan after a repayment: its id and its balance, in cents. */
export interface RepaidLoan {
  readonly id: number;
  readonly balance: number;
}

@Injectable()
export class Repayments {
  constructor(private readonly locks: LockService) {}

  /** Repays `cents` of loan `id` in one fenced transaction; a LockLostError means nothing was written. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], retryAfterSeconds: 1, transaction: { runner: DrizzleMysqlTransactions } })
  async repay(id: number, cents: number): Promise<RepaidLoan> {
    const tx = this.locks.currentTransaction(DrizzleMysqlTransactions);
    const [loan] = await tx.select({ balance: loans.balance }).from(loans).where(eq(loans.id, id));
    if (!loan) throw new NotFoundException(`no loan ${id}`); // 404: the transaction rolls back
    await tx.update(loans).set({ balance: loan.balance - cents }).where(eq(loans.id, id));
    await tx.insert(repayments).values({ loanId: id, cents });
    return { id, balance: loan.balance - cents };
  }
}

@Controller('loans')
export class LoansController {
  constructor(private readonly repayments: Repayments) {}

  // 201 and the new balance; 404 no such loan; 423 while another repayment holds the loan's lock (Retry-After: 1);
  // 409 the lock was lost before the commit (forced free, reaped, its lease over): nothing was written.
  @Post(':id/repayments')
  repay(@Param('id', ParseIntPipe) id: number, @Body('cents', ParseIntPipe) cents: number): Promise<RepaidLoan> {
    return this.repayments.repay(id, cents);
  }
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    LockModule.forRoot({ appId: process.env.APP_ID ?? 'api-1', url: process.env.DATABASE_URL ?? 'mysql://localhost/app' }),
  ],
  controllers: [LoansController],
  providers: [DrizzleMysqlTransactions, Repayments],
})
export class AppModule {}
