import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { sql } from 'drizzle-orm';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { LockAdminService } from 'nestjs-db-locks';
import { REPO_ROOT } from '../readme/documents.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

/** docs/drizzle.md's section on MySQL and MariaDB, from its heading to the next one. */
function mysqlSection(): string {
  const section = read('docs/drizzle.md').split('\n## On MySQL and MariaDB\n')[1]?.split('\n## ')[0];
  if (section === undefined) throw new Error('docs/drizzle.md has no section "On MySQL and MariaDB"');
  return section;
}

/** The fenced blocks of `lang` in `text`, each with its final newline. */
const blocksOf = (text: string, lang: string): string[] =>
  [...text.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((match) => match[1]!);

/** The statements of the section's SQL block, in order. */
const printedTables = (): string[] =>
  blocksOf(mysqlSection(), 'sql')[0]!
    .split(';\n')
    .map((statement) => statement.trim())
    .filter(Boolean);

/** The request the section prints as a `curl`, and the answer it prints under it. */
function printedRepayment(): { path: string; body: unknown; answer: unknown } {
  const printed = /curl -X POST -H 'Content-Type: application\/json' -d '([^']+)' localhost:3000(\S+)\n# (\{.*\})\n/.exec(mysqlSection());
  if (!printed) throw new Error("docs/drizzle.md's MySQL section prints no curl with its answer");
  return { body: JSON.parse(printed[1]!), path: printed[2]!, answer: JSON.parse(printed[3]!) };
}

describe("docs/drizzle.md's MySQL and MariaDB application", () => {
  it('is test/data-layers/drizzle-mysql.app.ts, the application the spec below serves', () => {
    expect(blocksOf(mysqlSection(), 'ts')).toEqual([read('test/data-layers/drizzle-mysql.app.ts')]);
  });

  it('prints its tables, a curl and its answer', () => {
    expect(printedTables().map((statement) => statement.split(' (')[0])).toEqual([
      'CREATE TABLE loans',
      'CREATE TABLE repayments',
      'INSERT INTO loans',
    ]);
    expect(printedRepayment().path).toBe('/loans/1/repayments');
  });
});

/**
 * The block docs/drizzle.md prints for MySQL and MariaDB, served over HTTP on a MariaDB database of its own: the tables
 * created by the page's SQL, the application imported as it is (it reads `DATABASE_URL` when loaded). A repayment is
 * held in its transaction by a row lock the test takes on its loan (`SELECT … FOR UPDATE`): it waits at its UPDATE with
 * its grant held, so that a second repayment or a forced release meets it there.
 */
describeOnMysql('the Drizzle MySQL application of docs/drizzle.md over HTTP, on MariaDB', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let base: string;
  let printed: typeof import('./drizzle-mysql.app.js');

  beforeAll(async () => {
    db = await createMysqlTestDatabase(); // with the lock tables, as `npx nestjs-db-locks migrate` makes them
    for (const statement of printedTables()) await db.query(statement);
    const before = process.env.DATABASE_URL;
    process.env.DATABASE_URL = db.url;
    try {
      printed = await import('./drizzle-mysql.app.js');
      const moduleRef = await Test.createTestingModule({ imports: [printed.AppModule] }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
    } finally {
      if (before === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = before;
    }
    base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  async function post(path: string, body: unknown): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
  }
  const repay = (loan: number, cents: number) => post(`/loans/${loan}/repayments`, { cents });

  const balance = async (loan: number): Promise<number> =>
    Number((await db.query<{ balance: number }>('SELECT balance FROM loans WHERE id = $1', [loan]))[0]!.balance);
  const repayments = async (loan: number): Promise<number> =>
    Number((await db.query<{ n: number }>('SELECT count(*) AS n FROM repayments WHERE loan_id = $1', [loan]))[0]!.n);
  const stampOf = async (loan: number): Promise<number[]> =>
    (await db.query<{ stamp: string }>('SELECT stamp FROM locking WHERE lock_name = $1', [`loan:${loan}`])).map((row) => Number(row.stamp));

  /** Takes the row of `loan` in a transaction of the test's, so that a repayment of it waits at its UPDATE. */
  async function holdLoanRow(loan: number): Promise<() => Promise<void>> {
    const holder = await mysql.createConnection(db.url);
    await holder.query('BEGIN');
    await holder.query('SELECT balance FROM loans WHERE id = ? FOR UPDATE', [loan]);
    return async () => {
      await holder.query('ROLLBACK');
      await holder.end();
    };
  }
  /** How many repayments of this database are at their UPDATE of a loan: behind the test's row, they wait there. */
  const waiting = async (): Promise<number> =>
    Number(
      (
        await db.query<{ n: number }>(
          "SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE db = DATABASE() AND info LIKE 'update `loans`%'",
        )
      )[0]!.n,
    );

  it('repays a loan as the page prints it: 201 with the new balance, committed, its log row "business done"', async () => {
    const { path, body, answer } = printedRepayment();
    const before = await balance(1);
    const response = await post(path, body);
    expect({ status: response.status, body: response.body }).toEqual({ status: 201, body: answer });
    expect(await balance(1)).toBe(before - (body as { cents: number }).cents);
    expect(await repayments(1)).toBe(1);
    const log = await db.query<{ status: string; business_done: Date | null }>(
      "SELECT status, business_done FROM locking_log WHERE app_id = 'api-1' ORDER BY stamp DESC LIMIT 1",
    );
    expect(log[0]).toMatchObject({ status: 'RELEASED' });
    expect(log[0]!.business_done).not.toBeNull();
  });

  it('answers 404 for an unknown loan, writes nothing, and frees its lock', async () => {
    expect(await repay(404, 100)).toMatchObject({ status: 404 });
    expect(await repayments(404)).toBe(0);
    expect(await stampOf(404)).toEqual([]);
  });

  it('answers 423 with Retry-After while another repayment of the loan holds its lock: only that one commits', async () => {
    const before = await balance(2);
    const release = await holdLoanRow(2);
    let first: ReturnType<typeof repay> | undefined;
    try {
      first = repay(2, 100);
      await until(async () => (await waiting()) === 1, 10_000); // in its transaction, with the lock
      expect(await repay(2, 300)).toMatchObject({ status: 423, retryAfter: '1' });
    } finally {
      await release();
    }
    expect(await first).toMatchObject({ status: 201, body: { id: 2, balance: before - 100 } });
    expect(await repayments(2)).toBe(1);
    expect(await balance(2)).toBe(before - 100);
  });

  it('answers 409 and writes nothing when the lock is forced free mid-repayment; the next repayment commits', async () => {
    const before = await balance(1);
    const committed = await repayments(1);
    const release = await holdLoanRow(1);
    let lost: ReturnType<typeof repay> | undefined;
    try {
      lost = repay(1, 1000);
      await until(async () => (await waiting()) === 1, 10_000);
      const stamps = await stampOf(1);
      expect(stamps).toHaveLength(1);
      await app.get(LockAdminService).forceRelease(stamps[0]!, 'stuck repayment');
    } finally {
      await release();
    }
    expect(await lost).toMatchObject({ status: 409 });
    expect(await balance(1)).toBe(before);
    expect(await repayments(1)).toBe(committed);
    expect(await repay(1, 300)).toMatchObject({ status: 201, body: { id: 1, balance: before - 300 } });
  });

  it("runs the runner's transaction at the isolation level it is given (SERIALIZABLE: a plain read share-locks the row)", async () => {
    const runner = app.get(printed.DrizzleMysqlTransactions);
    /** Whether another connection finds loan 1's row locked after the transaction read it. */
    const readLocks = (isolation?: 'SERIALIZABLE') =>
      runner.run(
        async (tx) => {
          await tx.execute(sql`SELECT balance FROM loans WHERE id = 1`);
          return db.query('SELECT id FROM loans WHERE id = 1 FOR UPDATE NOWAIT').then(
            () => false,
            (error: { errno?: number }) => (error.errno === 1205 ? true : Promise.reject(error)), // lock wait timeout
          );
        },
        isolation ? { isolation } : {},
      );
    expect(await readLocks('SERIALIZABLE')).toBe(true);
    expect(await readLocks()).toBe(false); // REPEATABLE READ, the default: a consistent read, no lock
  });
});
