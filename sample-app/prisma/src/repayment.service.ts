import { Injectable, NotFoundException } from '@nestjs/common';
import { LockService, WithLocks } from 'nestjs-db-locks';
import { PrismaLockTransactions } from './prisma-lock-transactions.js';

/** A loan after a repayment: its id and its balance, in cents. */
export interface RepaidLoan {
  readonly id: number;
  readonly balance: number;
}

@Injectable()
export class RepaymentService {
  constructor(private readonly locks: LockService) {}

  // Write-locks `loan:<loanId>` (423 while another repayment of the loan holds it), then runs in one $transaction of
  // PrismaLockTransactions, fenced: the lock lost before the commit → rolled back, 409.
  @WithLocks({
    locks: (loanId: number) => [`loan:${loanId}_WRITE`],
    retryAfterSeconds: 1,
    transaction: { runner: PrismaLockTransactions },
  })
  async repay(loanId: number, amountCents: number): Promise<RepaidLoan> {
    const tx = this.locks.currentTransaction(PrismaLockTransactions); // outside a call of repay: NoFencedTransactionError
    const loan = await tx.loan.findUnique({ where: { id: loanId } });
    if (!loan) throw new NotFoundException(`no loan ${loanId}`); // 404: rolled back
    const repaid = await tx.loan.update({ where: { id: loanId }, data: { balance: loan.balance - amountCents } });
    await tx.repayment.create({ data: { loanId, amount: amountCents } });
    return { id: repaid.id, balance: repaid.balance };
  }
}
