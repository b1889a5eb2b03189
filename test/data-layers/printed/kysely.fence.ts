import { Injectable } from '@nestjs/common';
import { CompiledQuery, Kysely, PostgresDialect, type Transaction } from 'kysely';
import { LockFence, LockService, type LockTransactionRunner } from 'nestjs-db-locks';
import pg from 'pg';

interface Database {
  loans: { id: number; balance: number };
  repayments: { loan_id: number; cents: number };
}

@Injectable()
export class Repayments {
  private readonly db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) }),
  });

  /** Kysely's transactions, for LockFence: it runs the work in one, then sends the fence last in its `trx`. */
  private readonly transactions: LockTransactionRunner<Transaction<Database>> = {
    run: (work) => this.db.transaction().execute(work),
    execute: (trx, s) => trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params])),
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
        const { balance } = await trx.selectFrom('loans').select('balance').where('id', '=', id).executeTakeFirstOrThrow();
        await trx.updateTable('loans').set({ balance: balance - cents }).where('id', '=', id).execute();
        await trx.insertInto('repayments').values({ loan_id: id, cents }).execute();
      }); // the fence follows the work, in the same trx; then COMMIT
      return true;
    } finally {
      await this.locks.releaseLocks(stamp);
    }
  }
}
