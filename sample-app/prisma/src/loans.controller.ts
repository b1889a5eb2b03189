import { Body, Controller, Param, ParseIntPipe, Post } from '@nestjs/common';
import { type RepaidLoan, RepaymentService } from './repayment.service.js';

@Controller('loans')
export class LoansController {
  constructor(private readonly repayments: RepaymentService) {}

  @Post(':id/repayments') // 201, 423 while the loan is being repaid, 409 when the lock was lost (nothing written)
  repay(
    @Param('id', ParseIntPipe) id: number,
    @Body('amountCents', ParseIntPipe) amountCents: number,
  ): Promise<RepaidLoan> {
    return this.repayments.repay(id, amountCents);
  }
}
