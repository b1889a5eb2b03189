import pg from 'pg';
import { ActivityService } from '../../sample-app/src/activity/activity.service.js';
import { LoanDeskJob } from '../../sample-app/src/loans/loan-desk.job.js';
import type { LoanView } from '../../sample-app/src/loans/loans.service.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { call, type SampleInstance, startSampleInstance } from './support/sample-instance.js';

/**
 * The sample's loan desk on three instances at once. Repayments and debt transfers of *different* loans run in
 * parallel (each holds only its own loan's lock) and all of them move money between the same investor accounts:
 * the business transactions must take those rows in one fixed order, or PostgreSQL aborts one of two crossing
 * transactions with `deadlock detected` (40P01).
 */
describe('sample app: the loan desk on three instances', () => {
  let db: TestDatabase;
  let instances: SampleInstance[] = [];

  const loans = async (): Promise<LoanView[]> => (await call<LoanView[]>(`${instances[0]?.baseUrl}/loans`)).body;
  const money = async (): Promise<number> => {
    const [row] = await db.query<{ total: number }>(
      `SELECT ((SELECT sum(balance_cents) FROM investor_accounts)
             + (SELECT sum(outstanding_cents) FROM loans))::int AS total`,
    );
    return row?.total ?? NaN;
  };
  /** Backends of this database waiting for a row lock (not the lock library's own advisory locks). */
  const rowLockWaiters = async (): Promise<number> => {
    const [row] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory'`,
    );
    return row?.n ?? 0;
  };

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    // One after the other: the first one runs the migrations.
    for (const appId of ['desk-1', 'desk-2', 'desk-3']) {
      instances.push(await startSampleInstance(db.url, { appId, repaymentMs: 30, transferMs: 20 }));
    }
  });
  afterAll(async () => {
    for (const instance of instances.reverse()) await instance.close();
    instances = [];
    await db?.drop();
  });

  it('lets a repayment and a transfer of two loans cross on shared investors without a deadlock', async () => {
    // Loan 1's debts belong to alice, bob and chen; loan 3's to alice, chen and emil (the sample's first data).
    const [loan1, loan3] = [1, 3].map((id) => loans().then((all) => all.find((loan) => loan.id === id)));
    expect((await loan1)?.debts.map((debt) => debt.investor)).toEqual(['alice', 'bob', 'chen']);
    const alicesDebt = (await loan3)?.debts.find((debt) => debt.investor === 'alice');
    const moneyBefore = await money();

    // Another transaction holds bob's account, so the repayment of loan 1 stops in the middle of its credits.
    const blocker = new pg.Client({ connectionString: db.url });
    blocker.on('error', () => undefined); // dropped with the database at the end: not an error of this test
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM investor_accounts WHERE investor = 'bob' FOR UPDATE`);

      const [a, b] = instances;
      const repayment = call(`${a?.baseUrl}/loans/1/repayments`, { amountCents: 30_000 });
      await until(async () => (await rowLockWaiters()) === 1); // the repayment waits for bob's account
      // chen buys alice's debt of loan 3: chen pays alice, while the repayment is still to credit chen.
      const transfer = call(`${b?.baseUrl}/loans/3/transfers`, { debtId: alicesDebt?.id, to: 'chen', priceCents: 100 });
      await until(async () => (await rowLockWaiters()) === 2); // the transfer waits for the repayment
      await blocker.query('COMMIT');

      // Taken in no fixed order, the repayment now waits for chen's account, held by the transfer that waits for
      // alice's, held by the repayment: PostgreSQL aborts one of them (HTTP 500). In investor order, both succeed.
      expect([(await repayment).status, (await transfer).status]).toEqual([201, 201]);
    } finally {
      await blocker.end();
    }
    expect((await loans()).every((loan) => loan.balanced)).toBe(true);
    expect(await money()).toBe(moneyBefore);
  });

  it('serves random customers on three instances at once with no error and the books balanced', async () => {
    const moneyBefore = await money();
    const desks = instances.map((instance) => instance.app.get(LoanDeskJob));
    const rounds = 12;
    const customersPerDesk = 6; // 18 customers at a time over three loans: repayments, transfers and 423s mix
    const failures: unknown[] = [];
    for (let round = 0; round < rounds; round++) {
      const served = desks.flatMap((desk) => Array.from({ length: customersPerDesk }, () => desk.serveOne()));
      for (const outcome of await Promise.allSettled(served)) {
        if (outcome.status === 'rejected') failures.push(outcome.reason);
      }
    }
    // A deadlock (or any database error) is not an HTTP answer: the desk rethrows it.
    expect(failures).toEqual([]);

    const activity = instances.flatMap((instance) => instance.app.get(ActivityService).latest());
    const done = activity.filter((entry) => entry.outcome === 'done');
    expect(done.some((entry) => entry.what === 'repayment')).toBe(true);
    expect(done.some((entry) => entry.what === 'transfer')).toBe(true);
    expect(activity.some((entry) => entry.outcome === 'refused')).toBe(true); // the loans' locks were contended

    expect((await loans()).map((loan) => [loan.id, loan.balanced])).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
    expect(await money()).toBe(moneyBefore); // no cent created or lost
    const [negative] = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM investor_accounts WHERE balance_cents < 0',
    );
    expect(negative?.n).toBe(0);
  });
});
