import { Body, Controller, Get, Param, ParseIntPipe, Post } from '@nestjs/common';
import { parseRepayment, parseTransfer } from './loan-input.util.js';
import type { LoanOperationEntity } from './loan-operation.entity.js';
import { type LoanView, LoansService } from './loans.service.js';

/**
 * Seed 002's endpoints. A busy loan answers HTTP 423 Locked (Retry-After: 1): a repayment while anything runs on
 * the loan, a transfer while a repayment runs (or the loan's read permits are full).
 */
@Controller('loans')
export class LoansController {
  constructor(private readonly loans: LoansService) {}

  /** Every loan with its debts and whether its books balance. */
  @Get()
  list(): Promise<LoanView[]> {
    return this.loans.list();
  }

  /** The newest repayments and transfers of a loan, with their lock stamps and database start/finish times. */
  @Get(':id/operations')
  operations(@Param('id', ParseIntPipe) id: number): Promise<LoanOperationEntity[]> {
    return this.loans.operations(id);
  }

  /** `{ "amountCents": 25000 }`: a repayment under `loan:<id>` (write). */
  @Post(':id/repayments')
  repay(@Param('id', ParseIntPipe) id: number, @Body() body: unknown): Promise<LoanOperationEntity> {
    return this.loans.repay(id, parseRepayment(body));
  }

  /** `{ "debtId": 2, "to": "dana", "priceCents": 3400000 }`: a debt transfer under `loan:<id>` (read). */
  @Post(':id/transfers')
  transfer(@Param('id', ParseIntPipe) id: number, @Body() body: unknown): Promise<LoanOperationEntity> {
    return this.loans.transfer(id, parseTransfer(body));
  }
}
