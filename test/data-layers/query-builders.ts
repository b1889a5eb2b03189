import { CompiledQuery, Kysely, MysqlDialect, PostgresDialect, sql, type Transaction } from 'kysely';
import knex, { type Knex } from 'knex';
import { createPool } from 'mysql2';
import pg from 'pg';
import type { LockFenceStatement, LockTransactionRunOptions } from 'nestjs-db-locks';
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
  /** The rows of a SELECT without parameters, in the transaction. */
  rows(text: string): Promise<Record<string, unknown>[]>;
  /** Sends a statement of `LockFence` through the transaction, as docs/<layer>.md shows it. */
  readonly execute: (statement: LockFenceStatement) => Promise<unknown>;
}

/** The statements of a `LayerTransaction`, written in one layer's transaction object. */
export type LayerWork = Omit<LayerTransaction, 'execute'>;

/** A data layer's pool on the test database: transactions that commit when `fn` resolves and roll back when it rejects. */
export interface LayerPool {
  transaction<T>(fn: (trx: LayerTransaction) => Promise<T>, options?: LockTransactionRunOptions): Promise<T>;
  close(): Promise<void>;
}

/** A data layer the fence specs run on. */
export interface DataLayer {
  readonly name: string;
  open(dialect: TestDialect, url: string): LayerPool;
}

/** Kysely on the test database. */
export const kyselyDb = (dialect: TestDialect, url: string) =>
  new Kysely<Database>({
    dialect:
      dialect.name === 'PostgreSQL'
        ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) })
        : new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: 4 }) }),
  });

/** The repayment's statements in a Kysely transaction. */
export const kyselyWork = (trx: Transaction<Database>): LayerWork => ({
  insertRepayment: async (loan, amount) => void (await trx.insertInto('repayments').values({ loan_id: loan, amount }).execute()),
  balance: async (loan) => Number((await trx.selectFrom('loans').select('balance').where('id', '=', loan).executeTakeFirstOrThrow()).balance),
  setBalance: async (loan, balance) => void (await trx.updateTable('loans').set({ balance }).where('id', '=', loan).execute()),
  rows: async (text) => (await sql.raw<Record<string, unknown>>(text).execute(trx)).rows,
});

const kyselyLayer: DataLayer = {
  name: 'Kysely',
  open(dialect, url) {
    const db = kyselyDb(dialect, url);
    return {
      transaction: (fn) =>
        db.transaction().execute((trx) => fn({ ...kyselyWork(trx), execute: (s) => trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params])) })),
      close: () => db.destroy(),
    };
  },
};

/** Knex on the test database. */
export const knexDb = (dialect: TestDialect, url: string) =>
  knex({ client: dialect.name === 'PostgreSQL' ? 'pg' : 'mysql2', connection: url, pool: { min: 0, max: 4 } });

/** The repayment's statements in a Knex transaction. */
export const knexWork = (trx: Knex.Transaction): LayerWork => ({
  insertRepayment: async (loan, amount) => void (await trx('repayments').insert({ loan_id: loan, amount })),
  balance: async (loan) => Number((await trx('loans').where({ id: loan }).first('balance')).balance),
  setBalance: async (loan, balance) => void (await trx('loans').where({ id: loan }).update({ balance })),
  rows: async (text) => {
    const result: unknown = await trx.raw(text);
    return (Array.isArray(result) ? result[0] : (result as { rows: unknown }).rows) as Record<string, unknown>[];
  },
});

const knexLayer: DataLayer = {
  name: 'Knex',
  open(dialect, url) {
    const db = knexDb(dialect, url);
    return {
      transaction: (fn) =>
        db.transaction((trx) => fn({ ...knexWork(trx), execute: (s) => trx.raw(s.positional.sql, [...s.positional.params] as never) })),
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
            rows: (text) => tx.rows(text),
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
