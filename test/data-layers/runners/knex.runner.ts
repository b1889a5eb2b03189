import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import knex, { type Knex } from 'knex';
import {
  type LockFenceStatement,
  LockModule,
  LockService,
  type LockTransactionRunner,
  type LockTransactionRunOptions,
  WithLocks,
} from 'nestjs-db-locks';

@Injectable()
export class KnexTransactions implements LockTransactionRunner<Knex.Transaction> {
  readonly db = knex({ client: 'pg', connection: process.env.DATABASE_URL }); // or client: 'mysql2'

  run<T>(work: (trx: Knex.Transaction) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    const isolationLevel = options.isolation?.toLowerCase() as Knex.IsolationLevels | undefined;
    return this.db.transaction(work, isolationLevel ? { isolationLevel } : {});
  }

  execute(trx: Knex.Transaction, s: LockFenceStatement): Promise<unknown> {
    return trx.raw(s.positional.sql, [...s.positional.params] as never);
  }
}

@Injectable()
export class Repayments {
  constructor(private readonly locks: LockService) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], waitMs: 2000, transaction: { runner: KnexTransactions } })
  async repay(id: number, cents: number): Promise<void> {
    const trx = this.locks.currentTransaction(KnexTransactions); // Knex.Transaction
    await trx('loans').where({ id }).decrement('balance', cents);
    await trx('repayments').insert({ loan_id: id, cents });
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'api-1', url: process.env.DATABASE_URL ?? 'postgres://localhost/app' })],
  providers: [KnexTransactions, Repayments],
})
export class AppModule {}
