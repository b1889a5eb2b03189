import type { MigrationInterface, QueryRunner } from 'typeorm';
import { WS1_BASE_RATES } from '../../ws1/ws1-base-rates.js';
import { WS2_CATALOGUE } from '../../ws2/ws2-catalogue.js';

/** Loans (seed 002's 借款): id, borrower, principal in cents, and who holds its debts (债权) in per cent. */
const LOANS: ReadonlyArray<{
  id: number;
  borrower: string;
  cents: number;
  debts: ReadonlyArray<readonly [string, number]>;
}> = [
  {
    id: 1,
    borrower: 'Xiao Ming (car)',
    cents: 10_000_000,
    debts: [
      ['alice', 40],
      ['bob', 35],
      ['chen', 25],
    ],
  },
  {
    id: 2,
    borrower: 'Li Hua (shop)',
    cents: 5_000_000,
    debts: [
      ['bob', 50],
      ['dana', 50],
    ],
  },
  {
    id: 3,
    borrower: 'Wang Fang (studio)',
    cents: 2_000_000,
    debts: [
      ['alice', 30],
      ['chen', 30],
      ['emil', 40],
    ],
  },
];

const INVESTORS = ['alice', 'bob', 'chen', 'dana', 'emil'];

/**
 * The sample services' own tables: WS1's rates, WS2's prices (built from WS1's rates), and the loans of seed 002
 * with their debts, the investors' accounts and a record of every repayment and transfer. Seeds a first
 * generation of each. The lock tables come from the library's `LOCK_MIGRATIONS`, which run first.
 */
export class CreateSampleTables1763900000000 implements MigrationInterface {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'CreateSampleTables1763900000000';

  /** Creates and seeds the tables. */
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE ws1_rates (
        currency   varchar(3) PRIMARY KEY,
        rate       numeric(14, 6) NOT NULL CHECK (rate > 0),
        generation integer NOT NULL,
        built_at   timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE ws2_prices (
        product        varchar(40) NOT NULL,
        currency       varchar(3) NOT NULL,
        price          numeric(14, 2) NOT NULL,
        ws1_generation integer NOT NULL,
        PRIMARY KEY (product, currency)
      )`);
    await queryRunner.query(`
      CREATE TABLE loans (
        id                integer PRIMARY KEY,
        borrower          varchar(80) NOT NULL,
        principal_cents   integer NOT NULL CHECK (principal_cents > 0),
        outstanding_cents integer NOT NULL CHECK (outstanding_cents >= 0)
      )`);
    await queryRunner.query(`
      CREATE TABLE debts (
        id              serial PRIMARY KEY,
        loan_id         integer NOT NULL REFERENCES loans (id),
        investor        varchar(40) NOT NULL,
        principal_cents integer NOT NULL CHECK (principal_cents >= 0)
      )`);
    await queryRunner.query(`CREATE INDEX debts_loan_idx ON debts (loan_id)`);
    await queryRunner.query(`
      CREATE TABLE investor_accounts (
        investor      varchar(40) PRIMARY KEY,
        balance_cents integer NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE loan_operations (
        id           serial PRIMARY KEY,
        loan_id      integer NOT NULL REFERENCES loans (id),
        kind         varchar(10) NOT NULL CHECK (kind IN ('repayment', 'transfer')),
        app_id       varchar(200) NOT NULL,
        stamp        bigint NOT NULL,
        amount_cents integer NOT NULL,
        debt_id      integer REFERENCES debts (id),
        started_at   timestamptz NOT NULL,
        finished_at  timestamptz NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX loan_operations_loan_idx ON loan_operations (loan_id, started_at)`);

    for (const [currency, rate] of WS1_BASE_RATES) {
      await queryRunner.query('INSERT INTO ws1_rates (currency, rate, generation) VALUES ($1, $2, 1)', [
        currency,
        rate,
      ]);
    }
    for (const { product, eur } of WS2_CATALOGUE) {
      await queryRunner.query(
        `INSERT INTO ws2_prices (product, currency, price, ws1_generation)
         SELECT $1, currency, round($2 * rate, 2), generation FROM ws1_rates`,
        [product, eur],
      );
    }
    for (const investor of INVESTORS) {
      await queryRunner.query('INSERT INTO investor_accounts (investor, balance_cents) VALUES ($1, 5000000)', [
        investor,
      ]);
    }
    for (const loan of LOANS) {
      await queryRunner.query(
        'INSERT INTO loans (id, borrower, principal_cents, outstanding_cents) VALUES ($1, $2, $3, $3)',
        [loan.id, loan.borrower, loan.cents],
      );
      for (const [investor, percent] of loan.debts) {
        await queryRunner.query('INSERT INTO debts (loan_id, investor, principal_cents) VALUES ($1, $2, $3)', [
          loan.id,
          investor,
          (loan.cents * percent) / 100,
        ]);
      }
    }
  }

  /** Drops the tables. */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['loan_operations', 'investor_accounts', 'debts', 'loans', 'ws2_prices', 'ws1_rates']) {
      await queryRunner.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
