import mysql from 'mysql2/promise';
import type { LockFenceStatement, LockTransactionRunner } from 'nestjs-db-locks';
import pg from 'pg';
import type { TestDialect } from '../support/dialects.js';
import { positional } from '../support/mysql-test-database.js';
import { drizzleDb, drizzleMysqlWork, drizzlePgWork } from './drizzle-layer.js';
import { mikroOrm, mikroOrmWork } from './mikro-orm-layer.js';
import { openPrisma, prismaWork } from './prisma-repayments.js';
import { type DataLayer, type LayerPool, type LayerWork, knexDb, knexWork, kyselyDb, kyselyWork } from './query-builders.js';
import { DrizzleTransactions } from './runners/drizzle.runner.js';
import { KnexTransactions } from './runners/knex.runner.js';
import { KyselyTransactions } from './runners/kysely.runner.js';
import { MikroOrmTransactions } from './runners/mikro-orm.runner.js';
import { Mysql2Transactions } from './runners/mysql2.runner.js';
import { PgTransactions } from './runners/pg.runner.js';
import { PrismaTransactions } from './runners/prisma.runner.js';

/**
 * The runners the docs print (test/data-layers/runners/, each the code block of its page, checked by
 * runner-snippets.spec.ts) as data layers of with-locks-runner.spec.ts: every transaction is opened by the printed
 * `run` (with the method's options) and every fence sent by the printed `execute`. Only the connection the printed
 * class opens from `DATABASE_URL` is replaced by one on the test database (of the dialect under test: what a MariaDB
 * user changes in the printed code), after closing the printed one, which never connected.
 */
function printedLayer<Tx, R extends LockTransactionRunner<Tx>>(
  name: string,
  open: (dialect: TestDialect, url: string) => {
    runner: R;
    /** The statements of the repayment in the runner's transaction object. */
    work: (tx: Tx) => LayerWork;
    close: () => Promise<unknown>;
  },
): DataLayer {
  return {
    name,
    open(dialect, url): LayerPool {
      const { runner, work, close } = withDatabaseUrl(url, () => open(dialect, url));
      return {
        transaction: (fn, options = {}) =>
          runner.run((tx) => fn({ ...work(tx), execute: (s: LockFenceStatement) => runner.execute(tx, s) as Promise<unknown> }), options),
        close: async () => void (await close()),
      };
    },
  };
}

/** `fn()` with `DATABASE_URL` set to `url` (the printed classes read it when constructed). */
function withDatabaseUrl<T>(url: string, fn: () => T): T {
  const before = process.env.DATABASE_URL;
  process.env.DATABASE_URL = url;
  try {
    return fn();
  } finally {
    if (before === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = before;
  }
}

/** Sets the printed runner's connection field to `connection`, once the printed one is closed. */
function connect<R, K extends keyof R>(runner: R, field: K, connection: unknown): R {
  (runner as Record<K, unknown>)[field] = connection;
  return runner;
}

/** A `$1` query on a plain driver connection, its rows. */
const plainWork = (query: (text: string, values: unknown[]) => Promise<unknown[]>): LayerWork => ({
  insertRepayment: async (loan, amount) => void (await query('INSERT INTO repayments (loan_id, amount) VALUES ($1, $2)', [loan, amount])),
  balance: async (loan) => Number(((await query('SELECT balance FROM loans WHERE id = $1', [loan]))[0] as { balance: number }).balance),
  setBalance: async (loan, balance) => void (await query('UPDATE loans SET balance = $1 WHERE id = $2', [balance, loan])),
  rows: async (text) => (await query(text, [])) as Record<string, unknown>[],
});

export const PRINTED_RUNNERS: readonly DataLayer[] = [
  printedLayer('Kysely', (dialect, url) => {
    const runner = new KyselyTransactions();
    void runner.db.destroy();
    const db = kyselyDb(dialect, url);
    // The printed Database names the amount column `cents`; the test tables call it `amount`.
    return { runner: connect(runner, 'db', db), work: (trx) => kyselyWork(trx as never), close: () => db.destroy() };
  }),
  printedLayer('Knex', (dialect, url) => {
    const runner = new KnexTransactions();
    void runner.db.destroy();
    const db = knexDb(dialect, url);
    return { runner: connect(runner, 'db', db), work: knexWork, close: () => db.destroy() };
  }),
  printedLayer('Drizzle', (dialect, url) => {
    const runner = new DrizzleTransactions();
    void runner.db.$client.end();
    const opened = drizzleDb(dialect, url);
    // On MariaDB the transaction is Drizzle's mysql2 one: the printed run and execute are the same calls.
    const work = opened.dialect === 'pg' ? drizzlePgWork : (tx: unknown) => drizzleMysqlWork(tx as never);
    return { runner: connect(runner, 'db', opened.db), work: work as (tx: unknown) => LayerWork, close: opened.close };
  }),
  printedLayer('MikroORM', (dialect, url) => {
    const runner = new MikroOrmTransactions();
    void runner.orm.close(true);
    const orm = mikroOrm(dialect, url);
    return { runner: connect(runner, 'orm', orm), work: mikroOrmWork, close: () => orm.close(true) };
  }),
  printedLayer('Prisma', (dialect, url) => {
    const runner = new PrismaTransactions();
    void runner.prisma.$disconnect();
    const prisma = openPrisma(dialect, url);
    return { runner: connect(runner, 'prisma', prisma), work: prismaWork, close: () => prisma.$disconnect() };
  }),
  printedLayer('pg-mysql2', (dialect, url) => {
    if (dialect.name === 'PostgreSQL') {
      const runner = new PgTransactions();
      void runner.pool.end();
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      const work = (client: pg.PoolClient) => plainWork(async (text, values) => (await client.query(text, values)).rows);
      return { runner: connect(runner, 'pool', pool), work, close: () => pool.end() } as never;
    }
    const runner = new Mysql2Transactions();
    void runner.pool.end();
    const pool = mysql.createPool({ uri: url, connectionLimit: 4 });
    const work = (connection: mysql.PoolConnection) =>
      plainWork(async (text, values) => {
        const { sql, params } = positional(text, values);
        return (await connection.query(sql, params))[0] as unknown[];
      });
    return { runner: connect(runner, 'pool', pool), work, close: () => pool.end() } as never;
  }),
];
