import { EntitySchema } from '@mikro-orm/core';
import { EntityManager } from '@mikro-orm/postgresql';
import { Injectable } from '@nestjs/common';
import { LockFence, LockService, type LockTransactionRunner } from 'nestjs-db-locks';

interface Loan {
  id: number;
  balance: number;
}
interface Repayment {
  id: number;
  loanId: number;
  cents: number;
}
export const LoanSchema = new EntitySchema<Loan>({
  name: 'Loan',
  tableName: 'loans',
  properties: { id: { type: 'number', primary: true }, balance: { type: 'number' } },
});
export const RepaymentSchema = new EntitySchema<Repayment>({
  name: 'Repayment',
  tableName: 'repayments',
  properties: { id: { type: 'number', primary: true }, loanId: { type: 'number' }, cents: { type: 'number' } },
});

@Injectable()
export class Repayments {
  /** MikroORM's transactions, for LockFence: it runs the work in one, then sends the fence last in its `em`. */
  private readonly transactions: LockTransactionRunner<EntityManager> = {
    run: (work) => this.em.fork().transactional(work),
    execute: (em, s) => em.execute(s.positional.sql, [...s.positional.params], 'run'),
  };

  constructor(
    private readonly em: EntityManager, // your MikroORM's, e.g. from @mikro-orm/nestjs
    private readonly locks: LockService,
    private readonly fence: LockFence,
  ) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  async repay(id: number, cents: number): Promise<boolean> {
    const stamp = await this.locks.tryLocks([`loan:${id}_WRITE`], { waitMs: 2000 });
    if (stamp === 0) return false;
    try {
      await this.fence.transaction(stamp, this.transactions, async (em) => {
        const loan = await em.findOneOrFail(LoanSchema, id);
        loan.balance -= cents;
        em.persist(em.create(RepaymentSchema, { loanId: id, cents }));
        await em.flush(); // before the fence: what the work leaves unflushed would be written after it
      }); // the fence follows the work, in the same em's transaction; then COMMIT
      return true;
    } finally {
      await this.locks.releaseLocks(stamp);
    }
  }
}
