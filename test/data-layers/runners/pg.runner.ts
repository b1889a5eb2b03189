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
import pg from 'pg';

@Injectable()
export class PgTransactions implements LockTransactionRunner<pg.PoolClient> {
  readonly pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });

  async run<T>(work: (client: pg.PoolClient) => Promise<T>, options: LockTransactionRunOptions): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query(options.isolation ? `BEGIN ISOLATION LEVEL ${options.isolation}` : 'BEGIN');
      const value = await work(client);
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  execute(client: pg.PoolClient, s: LockFenceStatement): Promise<unknown> {
    return client.query(s.sql, [...s.params]);
  }
}

@Injectable()
export class Repayments {
  constructor(private readonly locks: LockService) {}

  /** Repays `cents` of loan `id`; a LockLostError means nothing was written. */
  @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], waitMs: 2000, transaction: { runner: PgTransactions } })
  async repay(id: number, cents: number): Promise<void> {
    const client = this.locks.currentTransaction(PgTransactions); // pg.PoolClient, inside BEGIN
    await client.query('UPDATE loans SET balance = balance - $1 WHERE id = $2', [cents, id]);
    await client.query('INSERT INTO repayments (loan_id, cents) VALUES ($1, $2)', [id, cents]);
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'api-1', url: process.env.DATABASE_URL ?? 'postgres://localhost/app' })],
  providers: [PgTransactions, Repayments],
})
export class AppModule {}
