import { EntitySchema, type IsolationLevel } from '@mikro-orm/core';
import { MikroORM, type SqlEntityManager } from '@mikro-orm/postgresql';
import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import {
  type LockFenceStatement,
  LockModule,
  LockService,
  type LockTransactionRunner,
  type LockTransactionRunOptions,
  WithLocks,
} from 'nestjs-db-locks';

interface Loan {
  id: number;
  balance: number;
}
const LoanSchema = new EntitySchema<Loan>({
  name: 'Loan',
  tableName: 'loans',
  properties: { id: { type: 'number', primary: true }, balance: { type: 'number' } },
});

@Injectable()
export class MikroOrmTransactions implements LockTransactionRunner<SqlEntityManager> {
  readonly orm = MikroORM.initSync({ clientUrl: process.env.DATABASE_URL, entities: [LoanSchema] });

  run<T>(work: (em: SqlEntityManager) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    const isolationLevel = options.isolation?.toLowerCase() as IsolationLevel | undefined;
    return this.orm.em.fork().transactional(work, isolationLevel ? { isolationLevel } : {});
  }

  execute(em: SqlEntityManager, s: LockFenceStatement): Promise<unknown> {
    return em.execute(s.positional.sql, [...s.positional.params], 'run');
  }
}

@Injectable()
export class Repayments {
  constructor(private readonly locks: LockService) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], waitMs: 2000, transaction: { runner: MikroOrmTransactions } })
  async repay(id: number, cents: number): Promise<void> {
    const em = this.locks.currentTransaction(MikroOrmTransactions);
    (await em.findOneOrFail(LoanSchema, id)).balance -= cents;
    await em.flush(); // before the method returns: the fence is the last statement
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'api-1', url: process.env.DATABASE_URL ?? 'postgres://localhost/app' })],
  providers: [MikroOrmTransactions, Repayments],
})
export class AppModule {}
