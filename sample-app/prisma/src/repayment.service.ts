import { Injectable, NotFoundException } from '@nestjs/common';
import { LockFence, LockService, WithLocks } from 'nestjs-db-locks';
import { PrismaService } from './prisma.service.js';

/** A loan after a repayment: its id and its balance, in cents. */
export interface RepaidLoan {
  readonly id: number;
  readonly balance: number;
}

@Injectable()
export class RepaymentService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly locks: LockService,
    private readonly fence: LockFence,
  ) {}

  // Write-locks `loan:<loanId>` (423 while another repayment of the loan holds it), then one fenced $transaction.
  @WithLocks({ locks: (loanId: number) => [`loan:${loanId}_WRITE`], retryAfterSeconds: 1 })
  async repay(loanId: number, amountCents: number): Promise<RepaidLoan> {
    const { stamp } = this.locks.currentLock()!; // the grant @WithLocks took for this call
    return this.fence.transaction(stamp, (fenced) =>
      this.prisma.$transaction(async (tx) => {
        const loan = await tx.loan.findUnique({ where: { id: loanId } });
        if (!loan) throw new NotFoundException(`no loan ${loanId}`);
        const repaid = await tx.loan.update({ where: { id: loanId }, data: { balance: loan.balance - amountCents } });
        await tx.repayment.create({ data: { loanId, amount: amountCents } });
        await fenced((s) => tx.$executeRawUnsafe(s.sql, ...s.params)); // last: the lock lost → rollback, 409
        return { id: repaid.id, balance: repaid.balance };
      }),
    );
  }
}
