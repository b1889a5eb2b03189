import { CompiledQuery, Kysely, MysqlDialect, PostgresDialect } from 'kysely';
import knex from 'knex';
import { createPool } from 'mysql2';
import pg from 'pg';
import type { LockFenceStatement } from 'nestjs-db-locks';
import type { TestDialect } from '../support/dialects.js';
import { businessPool } from './business-pool.js';
import { drizzleLayer } from './drizzle-layer.js';
import { mikroOrmLayer } from './mikro-orm-layer.js';

/** The application's tables, as Kysely types them. */
interface Database {
  loans: { id: number; balance: number };
  repayments: { loan_id: number; amount: number };
}

/** What the fence specs do inside one transaction of a data layer, written the way its users write it. */
export interface LayerTransaction {
  insertRepayment(loan: number, amount: number): Promise<void>;
  balance(loan: number): Promise<number>;
  setBalance(loan: number, balance: number): Promise<void>;
  /** Sends a statement of `LockFence` through the transaction, as docs/<layer>.md shows it. */
  readonly execute: (statement: LockFenceStatement) => Promise<unknown>;
}

/** A data layer's pool on the test database: transactions that commit when `fn` resolves and roll back when it rejects. */
export interface LayerPool {
  transaction<T>(fn: (trx: LayerTransaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A data layer the fence specs run on. */
export interface DataLayer {
  readonly name: string;
  open(dialect: TestDialect, url: string): LayerPool;
}

const kyselyLayer: DataLayer = {
  name: 'Kysely',
  open(dialect, url) {
    const db = new Kysely<Database>({
      dialect:
        dialect.name === 'PostgreSQL'
          ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) })
          : new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: 4 }) }),
    });
    return {
      transaction: (fn) =>
        db.transaction().execute((trx) =>
          fn({
            insertRepayment: async (loan, amount) => void (await trx.insertInto('repayments').values({ loan_id: loan, amount }).execute()),
            balance: async (loan) =>
              Number((await trx.selectFrom('loans').select('balance').where('id', '=', loan).executeTakeFirstOrThrow()).balance),
            setBalance: async (loan, balance) => void (await trx.updateTable('loans').set({ balance }).where('id', '=', loan).execute()),
            execute: (s) => trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params])),
          }),
        ),
      close: () => db.destroy(),
    };
  },
};

const knexLayer: DataLayer = {
  name: 'Knex',
  open(dialect, url) {
    const db = knex({ client: dialect.name === 'PostgreSQL' ? 'pg' : 'mysql2', connection: url, pool: { min: 0, max: 4 } });
    return {
      transaction: (fn) =>
        db.transaction((trx) =>
          fn({
            insertRepayment: async (loan, amount) => void (await trx('repayments').insert({ loan_id: loan, amount })),
            balance: async (loan) => Number((await trx('loans').where({ id: loan }).first('balance')).balance),
            setBalance: async (loan, balance) => void (await trx('loans').where({ id: loan }).update({ balance })),
            execute: (s) => trx.raw(s.positional.sql, [...s.positional.params] as never),
          }),
        ),
      close: () => db.destroy(),
    };
  },
};

/** The data layers of the fence specs (Drizzle's in drizzle-layer.ts, MikroORM's in mikro-orm-layer.ts). */
export const DATA_LAYERS: readonly DataLayer[] = [kyselyLayer, knexLayer, drizzleLayer, mikroOrmLayer];

/**
 * Plain `pg` / `mysql2/promise` (business-pool.ts) as a data layer: BEGIN on one connection of the pool, `fn`, then
 * COMMIT (ROLLBACK when `fn` rejects), the fence sent with the connection's `query`.
 */
export const plainDriverLayer: DataLayer = {
  name: 'pg-mysql2',
  open(dialect, url) {
    const business = businessPool(dialect, url);
    return {
      async transaction(fn) {
        const tx = await business.begin();
        try {
          const value = await fn({
            insertRepayment: (loan, amount) => tx.run('INSERT INTO repayments (loan_id, amount) VALUES ($1, $2)', [loan, amount]),
            balance: async (loan) => Number((await tx.rows<{ balance: number }>('SELECT balance FROM loans WHERE id = $1', [loan]))[0]!.balance),
            setBalance: (loan, balance) => tx.run('UPDATE loans SET balance = $1 WHERE id = $2', [balance, loan]),
            execute: (s) => tx.connection.query(s.sql, [...s.params]),
          });
          await tx.connection.query('COMMIT', []);
          return value;
        } finally {
          await tx.end();
        }
      },
      close: () => business.close(),
    };
  },
};
