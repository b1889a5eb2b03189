import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { PrismaPg } from '@prisma/adapter-pg';
import { type Prisma, PrismaClient } from '@prisma/client';
import {
  type LockFenceStatement,
  type LockTransactionIsolation,
  LockModule,
  LockService,
  type LockTransactionRunner,
  type LockTransactionRunOptions,
  WithLocks,
} from 'nestjs-db-locks';

/** `transaction.isolation` as Prisma names it. */
const ISOLATION: Record<LockTransactionIsolation, Prisma.TransactionIsolationLevel> = {
  'READ UNCOMMITTED': 'ReadUncommitted',
  'READ COMMITTED': 'ReadCommitted',
  'REPEATABLE READ': 'RepeatableRead',
  SERIALIZABLE: 'Serializable',
};

@Injectable()
export class PrismaTransactions implements LockTransactionRunner<Prisma.TransactionClient> {
  readonly prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL }) });

  run<T>(work: (tx: Prisma.TransactionClient) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    return this.prisma.$transaction(work, options.isolation ? { isolationLevel: ISOLATION[options.isolation] } : {});
  }

  execute(tx: Prisma.TransactionClient, s: LockFenceStatement): Promise<unknown> {
    return tx.$executeRawUnsafe(s.sql, ...s.params);
  }
}

@Injectable()
export class Repayments {
  constructor(private readonly locks: LockService) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], waitMs: 2000, transaction: { runner: PrismaTransactions } })
  async repay(id: number, cents: number): Promise<void> {
    const tx = this.locks.currentTransaction(PrismaTransactions); // Prisma.TransactionClient
    const loan = await tx.loan.findUniqueOrThrow({ where: { id } });
    await tx.loan.update({ where: { id }, data: { balance: loan.balance - cents } });
    await tx.repayment.create({ data: { loanId: id, amount: cents } });
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'api-1', url: process.env.DATABASE_URL ?? 'postgres://localhost/app' })],
  providers: [PrismaTransactions, Repayments],
})
export class AppModule {}
