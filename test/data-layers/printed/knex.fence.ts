import { Injectable } from '@nestjs/common';
import knex, { type Knex } from 'knex';
import { LockFence, LockService, type LockTransactionRunner } from 'nestjs-db-locks';

@Injectable()
export class Repayments {
  private readonly db = knex({ client: 'pg', connection: process.env.DATABASE_URL }); // or client: 'mysql2'

  /** Knex's transactions, for LockFence: it runs the work in one, then sends the fence last in its `trx`. */
  private readonly transactions: LockTransactionRunner<Knex.Transaction> = {
    run: (work) => this.db.transaction(work),
    execute: (trx, s) => trx.raw(s.positional.sql, [...s.positional.params] as never),
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
      await this.fence.transaction(stamp, this.transactions, async (trx) => {
        await trx('loans').where({ id }).decrement('balance', cents);
        await trx('repayments').insert({ loan_id: id, cents });
      }); // the fence follows the work, in the same trx; then COMMIT
      return true;
    } finally {
      await this.locks.releaseLocks(stamp);
    }
  }
}
