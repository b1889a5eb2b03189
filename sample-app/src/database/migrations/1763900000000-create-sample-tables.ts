import type { MigrationInterface, QueryRunner } from 'typeorm';
import { type SampleDialect, sampleDialectOf } from '../sample-dialect.js';
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
 * The sample's tables in each dialect: the same columns and constraints, in PostgreSQL's types or MySQL's / MariaDB's
 * (InnoDB; times as `DATETIME(6)` in UTC, as the driver reads and writes them).
 */
const TABLES: Record<SampleDialect, readonly string[]> = {
  postgres: [
    `CREATE TABLE ws1_rates (
      currency   varchar(3) PRIMARY KEY,
      rate       numeric(14, 6) NOT NULL CHECK (rate > 0),
      generation integer NOT NULL,
      built_at   timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE TABLE ws2_prices (
      product        varchar(40) NOT NULL,
      currency       varchar(3) NOT NULL,
      price          numeric(14, 2) NOT NULL,
      ws1_generation integer NOT NULL,
      PRIMARY KEY (product, currency)
    )`,
    `CREATE TABLE loans (
      id                integer PRIMARY KEY,
      borrower          varchar(80) NOT NULL,
      principal_cents   integer NOT NULL CHECK (principal_cents > 0),
      outstanding_cents integer NOT NULL CHECK (outstanding_cents >= 0)
    )`,
    `CREATE TABLE debts (
      id              serial PRIMARY KEY,
      loan_id         integer NOT NULL REFERENCES loans (id),
      investor        varchar(40) NOT NULL,
      principal_cents integer NOT NULL CHECK (principal_cents >= 0)
    )`,
    `CREATE INDEX debts_loan_idx ON debts (loan_id)`,
    `CREATE TABLE investor_accounts (
      investor      varchar(40) PRIMARY KEY,
      balance_cents integer NOT NULL
    )`,
    `CREATE TABLE loan_operations (
      id           serial PRIMARY KEY,
      loan_id      integer NOT NULL REFERENCES loans (id),
      kind         varchar(10) NOT NULL CHECK (kind IN ('repayment', 'transfer')),
      app_id       varchar(200) NOT NULL,
      stamp        bigint NOT NULL,
      amount_cents integer NOT NULL,
      debt_id      integer REFERENCES debts (id),
      started_at   timestamptz NOT NULL,
      finished_at  timestamptz NOT NULL
    )`,
    `CREATE INDEX loan_operations_loan_idx ON loan_operations (loan_id, started_at)`,
  ],
  mysql: [
    `CREATE TABLE ws1_rates (
      currency   VARCHAR(3) PRIMARY KEY,
      rate       DECIMAL(14, 6) NOT NULL CHECK (rate > 0),
      generation INT NOT NULL,
      built_at   DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6))
    ) ENGINE = InnoDB`,
    `CREATE TABLE ws2_prices (
      product        VARCHAR(40) NOT NULL,
      currency       VARCHAR(3) NOT NULL,
      price          DECIMAL(14, 2) NOT NULL,
      ws1_generation INT NOT NULL,
      PRIMARY KEY (product, currency)
    ) ENGINE = InnoDB`,
    `CREATE TABLE loans (
      id                INT PRIMARY KEY,
      borrower          VARCHAR(80) NOT NULL,
      principal_cents   INT NOT NULL CHECK (principal_cents > 0),
      outstanding_cents INT NOT NULL CHECK (outstanding_cents >= 0)
    ) ENGINE = InnoDB`,
    `CREATE TABLE debts (
      id              INT AUTO_INCREMENT PRIMARY KEY,
      loan_id         INT NOT NULL,
      investor        VARCHAR(40) NOT NULL,
      principal_cents INT NOT NULL CHECK (principal_cents >= 0),
      INDEX debts_loan_idx (loan_id),
      FOREIGN KEY (loan_id) REFERENCES loans (id)
    ) ENGINE = InnoDB`,
    `CREATE TABLE investor_accounts (
      investor      VARCHAR(40) PRIMARY KEY,
      balance_cents INT NOT NULL
    ) ENGINE = InnoDB`,
    `CREATE TABLE loan_operations (
      id           INT AUTO_INCREMENT PRIMARY KEY,
      loan_id      INT NOT NULL,
      kind         VARCHAR(10) NOT NULL CHECK (kind IN ('repayment', 'transfer')),
      app_id       VARCHAR(200) NOT NULL,
      stamp        BIGINT NOT NULL,
      amount_cents INT NOT NULL,
      debt_id      INT NULL,
      started_at   DATETIME(6) NOT NULL,
      finished_at  DATETIME(6) NOT NULL,
      INDEX loan_operations_loan_idx (loan_id, started_at),
      FOREIGN KEY (loan_id) REFERENCES loans (id),
      FOREIGN KEY (debt_id) REFERENCES debts (id)
    ) ENGINE = InnoDB`,
  ],
};

/**
 * One INSERT of `rows` (all with the same columns) into `table`, with the driver's own placeholders (`$1` or `?`).
 * Not the query builder: it would map the columns through the application's entities, which may change later.
 */
async function insertRows(
  queryRunner: QueryRunner,
  table: string,
  rows: ReadonlyArray<Record<string, unknown>>,
): Promise<void> {
  const columns = Object.keys(rows[0] ?? {});
  const driver = queryRunner.dataSource.driver;
  let index = 0;
  const tuples = rows.map(() => `(${columns.map(() => driver.createParameter('value', index++)).join(', ')})`);
  await queryRunner.query(
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`,
    rows.flatMap((row) => columns.map((column) => row[column])),
  );
}

/**
 * The sample services' own tables: WS1's rates, WS2's prices (built from WS1's rates), and the loans of seed 002
 * with their debts, the investors' accounts and a record of every repayment and transfer. Seeds a first
 * generation of each. The lock tables come from the library's `LOCK_MIGRATIONS`, which run first. The tables are
 * created in the dialect of the DataSource it runs on; the seed is the same on both.
 */
export class CreateSampleTables1763900000000 implements MigrationInterface {
  /** Migration name recorded in TypeORM's migrations table. */
  readonly name = 'CreateSampleTables1763900000000';

  /** Creates and seeds the tables. */
  async up(queryRunner: QueryRunner): Promise<void> {
    for (const statement of TABLES[sampleDialectOf(queryRunner.dataSource)]) await queryRunner.query(statement);

    await insertRows(
      queryRunner,
      'ws1_rates',
      WS1_BASE_RATES.map(([currency, rate]) => ({ currency, rate, generation: 1 })),
    );
    await insertRows(
      queryRunner,
      'ws2_prices',
      WS2_CATALOGUE.flatMap(({ product, eur }) =>
        WS1_BASE_RATES.map(([currency, rate]) => ({
          product,
          currency,
          price: Math.round(eur * rate * 100) / 100,
          ws1_generation: 1,
        })),
      ),
    );
    await insertRows(
      queryRunner,
      'investor_accounts',
      INVESTORS.map((investor) => ({ investor, balance_cents: 5_000_000 })),
    );
    await insertRows(
      queryRunner,
      'loans',
      LOANS.map(({ id, borrower, cents }) => ({ id, borrower, principal_cents: cents, outstanding_cents: cents })),
    );
    await insertRows(
      queryRunner,
      'debts',
      LOANS.flatMap(({ id, cents, debts }) =>
        debts.map(([investor, percent]) => ({ loan_id: id, investor, principal_cents: (cents * percent) / 100 })),
      ),
    );
  }

  /** Drops the tables. */
  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['loan_operations', 'investor_accounts', 'debts', 'loans', 'ws2_prices', 'ws1_rates']) {
      await queryRunner.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
