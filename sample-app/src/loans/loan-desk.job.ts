import { HttpException, Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { LockLostError, LockNotAcquiredError } from 'nestjs-db-locks';
import { ActivityService } from '../activity/activity.service.js';
import { LoansService } from './loans.service.js';

/** The name of the simulated loan desk in `SchedulerRegistry`. */
export const LOAN_DESK_JOB = 'loan-desk';

const INVESTORS = ['alice', 'bob', 'chen', 'dana', 'emil'];

function pick<T>(items: readonly T[]): T | undefined {
  return items[Math.floor(Math.random() * items.length)];
}

/**
 * Simulated customers of seed 002: every 1.5 s, a random repayment or debt transfer on a random loan, through the
 * same `LoansService` the HTTP endpoints use. Several instances doing this make the loans' locks contended.
 */
@Injectable()
export class LoanDeskJob {
  constructor(
    private readonly loans: LoansService,
    private readonly activity: ActivityService,
  ) {}

  /** One customer. */
  @Interval(LOAN_DESK_JOB, 1500)
  async serveOne(): Promise<void> {
    const loan = pick(await this.loans.list());
    if (!loan) return;
    const debt = pick(loan.debts.filter((d) => d.principalCents > 0));
    const repay = Math.random() < 0.4 && loan.outstandingCents > 0;
    const what = repay ? 'repayment' : 'transfer';
    try {
      if (repay) {
        const amountCents = Math.min(loan.outstandingCents, 10_000 + Math.floor(Math.random() * 40_000));
        await this.loans.repay(loan.id, { amountCents });
        this.activity.record(what, 'done', `loan ${loan.id}: repaid ${amountCents / 100}`);
      } else if (debt) {
        const to = pick(INVESTORS.filter((name) => name !== debt.investor)) ?? 'alice';
        const priceCents = Math.floor(debt.principalCents * 0.97);
        await this.loans.transfer(loan.id, { debtId: debt.id, to, priceCents });
        this.activity.record(what, 'done', `loan ${loan.id}: debt ${debt.id} ${debt.investor} → ${to}`);
      }
    } catch (error) {
      if (error instanceof LockNotAcquiredError)
        this.activity.record(what, 'refused', `loan ${loan.id}: ${error.message}`);
      else if (error instanceof HttpException || error instanceof LockLostError)
        this.activity.record(what, 'failed', `loan ${loan.id}: ${error.message}`);
      else throw error;
    }
  }
}
