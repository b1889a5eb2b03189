import { EntitySchema } from '@mikro-orm/core';
import { MikroORM as MariaDbOrm } from '@mikro-orm/mariadb';
import { MikroORM as PostgreSqlOrm, type SqlEntityManager } from '@mikro-orm/postgresql';
import type { TestDialect } from '../support/dialects.js';
import type { DataLayer, LayerWork } from './query-builders.js';

// The `fenced(...)` line of docs/mikro-orm.md is this layer's `execute` (the spec checks it).

interface Loan {
  id: number;
  balance: number;
}
/** A repayment row (the table has no primary key of its own: MikroORM needs one, so it is both columns). */
interface Repayment {
  loanId: number;
  amount: number;
}
const LoanSchema = new EntitySchema<Loan>({
  name: 'Loan',
  tableName: 'loans',
  properties: { id: { type: 'number', primary: true, autoincrement: false }, balance: { type: 'number' } },
});
const RepaymentSchema = new EntitySchema<Repayment>({
  name: 'Repayment',
  tableName: 'repayments',
  properties: { loanId: { type: 'number', primary: true, fieldName: 'loan_id' }, amount: { type: 'number', primary: true } },
});

/** MikroORM 6 on the test database: `@mikro-orm/postgresql` (PostgreSQL) or `@mikro-orm/mariadb` (MariaDB). */
export function mikroOrm(dialect: TestDialect, url: string) {
  const options = { clientUrl: url, entities: [LoanSchema, RepaymentSchema], pool: { min: 0, max: 4 } };
  return dialect.name === 'PostgreSQL' ? PostgreSqlOrm.initSync(options) : MariaDbOrm.initSync(options);
}

/** The repayment's statements in a MikroORM transaction (its fork's `em`). */
export const mikroOrmWork = (em: SqlEntityManager): LayerWork => ({
  insertRepayment: async (loan, amount) => void (await em.insert(RepaymentSchema, { loanId: loan, amount })),
  balance: async (loan) => (await em.findOneOrFail(LoanSchema, loan)).balance,
  setBalance: async (loan, balance) => {
    (await em.findOneOrFail(LoanSchema, loan)).balance = balance;
    await em.flush(); // before the fence: the fence is the last statement
  },
  rows: (text) => em.execute(text),
});

/** MikroORM 6 on `@mikro-orm/postgresql` (PostgreSQL) or `@mikro-orm/mariadb` (MariaDB), its transactions as the fence specs run them. */
export const mikroOrmLayer: DataLayer = {
  name: 'MikroORM',
  open(dialect, url) {
    const orm = mikroOrm(dialect, url);
    const root: SqlEntityManager = orm.em;
    return {
      transaction: (fn) =>
        root.fork().transactional((em) => fn({ ...mikroOrmWork(em), execute: (s) => em.execute(s.positional.sql, [...s.positional.params], 'run') })),
      close: () => orm.close(true),
    };
  },
};
