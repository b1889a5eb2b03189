import { eq, sql } from 'drizzle-orm';
import { integer, pgTable } from 'drizzle-orm/pg-core';
import { int, mysqlTable } from 'drizzle-orm/mysql-core';
import { drizzle as drizzleMysql } from 'drizzle-orm/mysql2';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { createPool } from 'mysql2/promise';
import type { LockFenceStatement } from 'nestjs-db-locks';
import pg from 'pg';
import type { TestDialect } from '../support/dialects.js';
import type { DataLayer, LayerWork } from './query-builders.js';

// `fenceSql` and the `fenced(...)` lines below are textually those of docs/drizzle.md (the spec checks it).

/** The fence as Drizzle SQL: its text, each `?` bound to its value. */
const fenceSql = (s: LockFenceStatement) =>
  sql.join(s.positional.sql.split('?').map((text, i) => (i === 0 ? sql.raw(text) : sql`${s.positional.params[i - 1]}${sql.raw(text)}`)));

const pgLoans = pgTable('loans', { id: integer('id').primaryKey(), balance: integer('balance').notNull() });
const pgRepayments = pgTable('repayments', { loanId: integer('loan_id').notNull(), amount: integer('amount').notNull() });
const mysqlLoans = mysqlTable('loans', { id: int('id').primaryKey(), balance: int('balance').notNull() });
const mysqlRepayments = mysqlTable('repayments', { loanId: int('loan_id').notNull(), amount: int('amount').notNull() });

type PgTx = Parameters<Parameters<ReturnType<typeof drizzlePg>['transaction']>[0]>[0];
type MysqlTx = Parameters<Parameters<ReturnType<typeof drizzleMysql>['transaction']>[0]>[0];

/** The repayment's statements in a Drizzle transaction on `node-postgres`. */
export const drizzlePgWork = (tx: PgTx): LayerWork => ({
  insertRepayment: async (loan, amount) => void (await tx.insert(pgRepayments).values({ loanId: loan, amount })),
  balance: async (loan) => (await tx.select({ balance: pgLoans.balance }).from(pgLoans).where(eq(pgLoans.id, loan)))[0]!.balance,
  setBalance: async (loan, balance) => void (await tx.update(pgLoans).set({ balance }).where(eq(pgLoans.id, loan))),
  rows: async (text) => (await tx.execute(sql.raw(text))).rows,
});

/** The repayment's statements in a Drizzle transaction on `mysql2`. */
export const drizzleMysqlWork = (tx: MysqlTx): LayerWork => ({
  insertRepayment: async (loan, amount) => void (await tx.insert(mysqlRepayments).values({ loanId: loan, amount })),
  balance: async (loan) => (await tx.select({ balance: mysqlLoans.balance }).from(mysqlLoans).where(eq(mysqlLoans.id, loan)))[0]!.balance,
  setBalance: async (loan, balance) => void (await tx.update(mysqlLoans).set({ balance }).where(eq(mysqlLoans.id, loan))),
  rows: async (text) => (await tx.execute(sql.raw(text)))[0] as unknown as Record<string, unknown>[],
});

/** Drizzle on the test database: `node-postgres` (PostgreSQL) or `mysql2` (MariaDB), with its pool. */
export function drizzleDb(dialect: TestDialect, url: string) {
  if (dialect.name === 'PostgreSQL') {
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    return { dialect: 'pg' as const, db: drizzlePg({ client: pool }), close: () => pool.end() };
  }
  const pool = createPool({ uri: url, connectionLimit: 4 });
  return { dialect: 'mysql' as const, db: drizzleMysql({ client: pool }), close: () => pool.end() };
}

/** Drizzle on `node-postgres` (PostgreSQL) or `mysql2` (MariaDB), its transactions as the fence specs run them. */
export const drizzleLayer: DataLayer = {
  name: 'Drizzle',
  open(dialect, url) {
    const opened = drizzleDb(dialect, url);
    return {
      transaction: (fn) =>
        opened.dialect === 'pg'
          ? opened.db.transaction((tx) => fn({ ...drizzlePgWork(tx), execute: (s) => tx.execute(fenceSql(s)) }))
          : opened.db.transaction((tx) => fn({ ...drizzleMysqlWork(tx), execute: (s) => tx.execute(fenceSql(s)) })),
      close: opened.close,
    };
  },
};
