import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DebtEntity } from './debt.entity.js';
import { InvestorAccountEntity } from './investor-account.entity.js';
import { LoanDeskJob } from './loan-desk.job.js';
import { LoanOperationEntity } from './loan-operation.entity.js';
import { LoanEntity } from './loan.entity.js';
import { LoansController } from './loans.controller.js';
import { LoansService } from './loans.service.js';

/** Loans (seed 002): repayments under the loan's write lock, debt transfers under its read lock. */
@Module({
  imports: [TypeOrmModule.forFeature([LoanEntity, DebtEntity, InvestorAccountEntity, LoanOperationEntity])],
  controllers: [LoansController],
  providers: [LoansService, LoanDeskJob],
  exports: [LoansService],
})
export class LoansModule {}
