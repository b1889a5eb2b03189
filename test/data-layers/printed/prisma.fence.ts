import { Injectable } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { type Prisma, PrismaClient } from '@prisma/client';
import { LockFence, LockService, type LockTransactionRunner } from 'nestjs-db-locks';

@Injectable()
export class Repayments {
  private readonly prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL }) });

  /** Prisma's interactive transactions, for LockFence: it runs the work in one, then sends the fence last in its `tx`. */
  private readonly transactions: LockTransactionRunner<Prisma.TransactionClient> = {
    run: (work) => this.prisma.$transaction(work),
    execute: (tx, s) => tx.$executeRawUnsafe(s.sql, ...s.params),
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
        const loan = await tx.loan.findUniqueOrThrow({ where: { id } });
        await tx.loan.update({ where: { id }, data: { balance: loan.balance - cents } });
        await tx.repayment.create({ data: { loanId: id, amount: cents } });
      }); // the fence follows the work, in the same tx; then COMMIT
      return true;
    } finally {
      await this.locks.releaseLocks(stamp);
    }
  }
}
