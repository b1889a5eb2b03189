import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { CompiledQuery, type IsolationLevel, Kysely, PostgresDialect, type Transaction } from 'kysely';
import {
  type LockFenceStatement,
  LockModule,
  LockService,
  type LockTransactionRunner,
  type LockTransactionRunOptions,
  WithLocks,
} from 'nestjs-db-locks';
import pg from 'pg';

interface Database {
  loans: { id: number; balance: number };
  repayments: { loan_id: number; cents: number };
}

@Injectable()
export class KyselyTransactions implements LockTransactionRunner<Transaction<Database>> {
  readonly db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) }),
  });

  run<T>(work: (trx: Transaction<Database>) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    const builder = this.db.transaction();
    const isolation = options.isolation?.toLowerCase() as IsolationLevel | undefined;
    return (isolation ? builder.setIsolationLevel(isolation) : builder).execute(work);
  }

  execute(trx: Transaction<Database>, s: LockFenceStatement): Promise<unknown> {
    return trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params]));
  }
}

@Injectable()
export class Repayments {
  constructor(private readonly locks: LockService) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], waitMs: 2000, transaction: { runner: KyselyTransactions } })
  async repay(id: number, cents: number): Promise<void> {
    const trx = this.locks.currentTransaction(KyselyTransactions); // Transaction<Database>
    const { balance } = await trx.selectFrom('loans').select('balance').where('id', '=', id).executeTakeFirstOrThrow();
    await trx.updateTable('loans').set({ balance: balance - cents }).where('id', '=', id).execute();
    await trx.insertInto('repayments').values({ loan_id: id, cents }).execute();
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'api-1', url: process.env.DATABASE_URL ?? 'postgres://localhost/app' })],
  providers: [KyselyTransactions, Repayments],
})
export class AppModule {}
