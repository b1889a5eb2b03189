import { Inject, Injectable } from '@nestjs/common';
import { Leader, type LeaderTerm } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ActivityService } from '../activity/activity.service.js';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample.config.js';
import { LoansService } from './loans.service.js';

/** The leader role of the sample: one instance of the fleet audits and reports the loan books. */
export const LOAN_BOOK_ROLE = 'loan-book-report';

/** The last report this instance published as the leader of `loan-book-report`. */
export interface LoanBookReport {
  /** The term it was published in (the role's fencing token). */
  readonly term: number;
  readonly at: string;
  readonly loans: number;
  readonly outstandingCents: number;
  /** Loans whose debts do not add up to what is outstanding (always 0 while the locks do their job). */
  readonly unbalanced: number;
}

/**
 * The loan book report (seed 002's books, seen whole): every `loanBookReportMs`, the leader of the role
 * `loan-book-report` reads every loan and its debts, checks that each loan's debts add up to what is outstanding, and
 * publishes the totals (this instance's activity feed, and its log). Every instance stands for the role; one leads,
 * the others wait in line, and the next one takes over when the leader stops (at once on a graceful stop, after the
 * lease on a crash). The report carries the term's fencing token, so a reader can tell a stale leader's report.
 */
@Injectable()
export class LoanBookReporter {
  private last?: LoanBookReport;

  constructor(
    private readonly loans: LoansService,
    private readonly activity: ActivityService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /** Runs while this instance leads the role: one report per period, until the signal fires. */
  @Leader(LOAN_BOOK_ROLE)
  async report(signal: AbortSignal, term: LeaderTerm): Promise<void> {
    this.activity.record(LOAN_BOOK_ROLE, 'done', `elected leader, term ${term.token}`);
    while (!signal.aborted) {
      try {
        this.publish(term, await this.loans.list());
      } catch (error) {
        if (signal.aborted) break;
        this.activity.record(LOAN_BOOK_ROLE, 'failed', (error as Error).message);
      }
      await sleep(this.config.loanBookReportMs, undefined, { signal }).catch(() => undefined);
    }
    this.activity.record(LOAN_BOOK_ROLE, 'skipped', `stopped leading, term ${term.token}: ${(signal.reason as Error).message}`);
  }

  /** The last report this instance published, if it ever led the role. */
  latest(): LoanBookReport | undefined {
    return this.last;
  }

  private publish(term: LeaderTerm, loans: Awaited<ReturnType<LoansService['list']>>): void {
    const report: LoanBookReport = {
      term: term.token,
      at: new Date().toISOString(),
      loans: loans.length,
      outstandingCents: loans.reduce((sum, loan) => sum + loan.outstandingCents, 0),
      unbalanced: loans.filter((loan) => !loan.balanced).length,
    };
    this.last = report;
    this.activity.record(
      LOAN_BOOK_ROLE,
      report.unbalanced === 0 ? 'done' : 'failed',
      `term ${report.term}: ${report.loans} loans, ${(report.outstandingCents / 100).toFixed(2)} outstanding, ` +
        `${report.unbalanced === 0 ? 'books balance' : `${report.unbalanced} unbalanced`}`,
    );
  }
}
