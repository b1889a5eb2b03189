import { Module } from '@nestjs/common';
import { LoanBookReporter } from './loan-book.leader.js';
import { LoansModule } from './loans.module.js';

/** The leader role `loan-book-report` (`LoanBookReporter`): imported when `loanBookReportMs` is above 0. */
@Module({
  imports: [LoansModule],
  providers: [LoanBookReporter],
  exports: [LoanBookReporter],
})
export class LoanBookModule {}
