import type { LockLogEntry, LockLostResponseBody } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ActivityService } from '../../../sample-app/src/activity/activity.service.js';
import { LoanDeskJob } from '../../../sample-app/src/loans/loan-desk.job.js';
import type { LoanView } from '../../../sample-app/src/loans/loans.service.js';
import type { TestDatabase } from '../../support/test-database.js';
import { until } from '../../support/until.js';
import type { AccountLockProbe } from './row-lock-probe.js';
import { call, type SampleInstance, startSampleInstance } from './sample-instance.js';

/**
 * The sample's loans checked from outside, in SQL that runs on PostgreSQL and on MySQL / MariaDB alike, so that one
 * check serves the specs of both dialects (the loan specs here and `test/mysql/sample-app.mysql.e2e.spec.ts`).
 */

/** One recorded operation of a loan, with its database start and finish as milliseconds. */
export interface OperationInterval {
  readonly kind: 'repayment' | 'transfer';
  readonly stamp: number;
  readonly started: number;
  readonly finished: number;
}

/**
 * Every cent of the sample: the investors' cash plus what the borrowers still owe. A repayment moves cents from the
 * loan to the investors, a transfer from one investor to another: the total never changes.
 */
export async function totalMoney(db: TestDatabase): Promise<number> {
  const [row] = await db.query<{ total: string | number }>(
    `SELECT (SELECT SUM(balance_cents) FROM investor_accounts) + (SELECT SUM(outstanding_cents) FROM loans) AS total`,
  );
  return Number(row?.total ?? NaN);
}

/** The recorded operations of a loan, oldest first (both drivers read the times as `Date`s). */
export async function loanOperations(db: TestDatabase, loanId: number): Promise<OperationInterval[]> {
  const rows = await db.query<{ kind: OperationInterval['kind']; stamp: string; started_at: Date; finished_at: Date }>(
    'SELECT kind, stamp, started_at, finished_at FROM loan_operations WHERE loan_id = $1 ORDER BY started_at, id',
    [loanId],
  );
  return rows.map((row) => ({
    kind: row.kind,
    stamp: Number(row.stamp),
    started: row.started_at.getTime(),
    finished: row.finished_at.getTime(),
  }));
}

/** `GET /loans` of an instance. */
export async function loansOf(instance: SampleInstance): Promise<LoanView[]> {
  return (await call<LoanView[]>(`${instance.baseUrl}/loans`)).body;
}

/**
 * Waves of repayments (write lock on `loan:1`) and transfers of every debt of loan 1 (read lock), from two instances
 * at once, then the checks: only 201s and 423s, no repayment's business interval meets another operation's, some
 * transfers overlap (reads share), the loan's books balance and not a cent is created or lost.
 */
export async function expectRepaymentsAloneOnTheirLoan(db: TestDatabase, a: SampleInstance, b: SampleInstance) {
  const moneyBefore = await totalMoney(db);
  const statuses = { repayment: [] as number[], transfer: [] as number[] };
  const repay = (via: SampleInstance) =>
    call(`${via.baseUrl}/loans/1/repayments`, { amountCents: 1000 + Math.floor(Math.random() * 9000) }).then((r) =>
      statuses.repayment.push(r.status),
    );
  const transferAll = async (): Promise<void> => {
    const debts = (await loansOf(a)).find((loan) => loan.id === 1)?.debts ?? [];
    const investors = ['alice', 'bob', 'chen', 'dana', 'emil'];
    await Promise.all(
      debts.map((debt, i) =>
        call(`${(i % 2 ? a : b).baseUrl}/loans/1/transfers`, {
          debtId: debt.id,
          to: investors.find((name, j) => name !== debt.investor && j >= i) ?? 'emil',
          priceCents: 100,
        }).then((r) => statuses.transfer.push(r.status)),
      ),
    );
  };
  for (let wave = 0; wave < 6; wave++) {
    // Alternate who starts first, and once in a while start both at the same instant.
    const lead = wave % 3 === 0 ? transferAll() : repay(wave % 2 ? a : b);
    if (wave % 3 !== 2) await sleep(40);
    await Promise.all([lead, wave % 3 === 0 ? repay(b) : transferAll(), repay(a)]);
  }

  expect(statuses.repayment.every((s) => s === 201 || s === 423)).toBe(true);
  expect(statuses.transfer.every((s) => s === 201 || s === 423)).toBe(true);
  expect(statuses.repayment.filter((s) => s === 201).length).toBeGreaterThanOrEqual(2);
  expect(statuses.transfer.filter((s) => s === 201).length).toBeGreaterThanOrEqual(3);
  expect([...statuses.repayment, ...statuses.transfer].filter((s) => s === 423).length).toBeGreaterThanOrEqual(3);

  const ops = await loanOperations(db, 1);
  const overlaps = (x: OperationInterval, y: OperationInterval) => x.started < y.finished && y.started < x.finished;
  for (const repayment of ops.filter((op) => op.kind === 'repayment')) {
    const clash = ops.find((other) => other !== repayment && overlaps(repayment, other));
    expect(clash).toBeUndefined();
  }
  const transfers = ops.filter((op) => op.kind === 'transfer');
  expect(transfers.some((t, i) => transfers.slice(i + 1).some((u) => overlaps(t, u)))).toBe(true); // reads share

  const loan = (await loansOf(a)).find((l) => l.id === 1);
  expect(loan?.balanced).toBe(true); // the debts add up to what is outstanding: no lost update
  expect(await totalMoney(db)).toBe(moneyBefore); // no cent created or lost
}

/**
 * A third instance that holds no grant longer than 100 ms (`maxHoldMs`, seed 002's reaper job, impatient) repays loan 3
 * (its business work takes longer): the repayment answers 409, the log says REAPED without "business done" (its own
 * reaper freed it), and the business transaction left nothing behind (the loan, the money, the operations).
 */
export async function expectReapedRepaymentRolledBack(db: TestDatabase, a: SampleInstance, b: SampleInstance) {
  const before = (await loansOf(a)).find((l) => l.id === 3);
  const moneyBefore = await totalMoney(db);
  const countBefore = (await loanOperations(db, 3)).length;
  const reaper = await startSampleInstance(db.url, { appId: 'loans-reaper', maxHoldMs: 100, reaperIntervalMs: 50 });
  try {
    expect(reaper.config.repaymentMs).toBeGreaterThan(100);
    const answer = await call<LockLostResponseBody>(`${reaper.baseUrl}/loans/3/repayments`, { amountCents: 7777 });
    expect(answer.status).toBe(409);
    const { stamp } = answer.body;
    expect(answer.body.message).toContain(`stamp ${stamp} are lost`);
    await until(async () =>
      (await call<LockLogEntry[]>(`${b.baseUrl}/api/log`)).body.some((e) => e.stamp === stamp && e.status === 'REAPED'),
    );
    const entry = (await call<LockLogEntry[]>(`${b.baseUrl}/api/log`)).body.find((e) => e.stamp === stamp);
    expect(entry).toMatchObject({
      status: 'REAPED',
      businessDoneAt: null,
      locks: [{ name: 'loan:3', mode: 'write' }],
    });
  } finally {
    await reaper.close();
  }
  expect((await loansOf(a)).find((l) => l.id === 3)).toEqual(before);
  expect(await totalMoney(db)).toBe(moneyBefore);
  expect(await loanOperations(db, 3)).toHaveLength(countBefore);
}

/**
 * A repayment of loan 1 (alice, bob, chen) and a transfer of loan 3 (chen buys alice's debt) crossing on shared
 * investors, on two instances: another transaction holds bob's account, so the repayment stops in the middle of its
 * accounts; the transfer then queues behind it. Taken in no fixed order, the repayment would next wait for chen's
 * account, held by the transfer that waits for alice's, held by the repayment: the database aborts one of them (HTTP
 * 500). In investor order, both succeed, the books balance and no cent is lost.
 */
export async function expectCrossingWithoutDeadlock(
  db: TestDatabase,
  [a, b]: readonly [SampleInstance, SampleInstance],
  probe: AccountLockProbe,
): Promise<void> {
  const [loan1, loan3] = [1, 3].map((id) => loansOf(a).then((all) => all.find((loan) => loan.id === id)));
  expect((await loan1)?.debts.map((debt) => debt.investor)).toEqual(['alice', 'bob', 'chen']);
  const alicesDebt = (await loan3)?.debts.find((debt) => debt.investor === 'alice');
  const moneyBefore = await totalMoney(db);

  const bob = await probe.hold('bob');
  try {
    const repayment = call(`${a.baseUrl}/loans/1/repayments`, { amountCents: 30_000 });
    await until(async () => (await probe.waiters()) === 1); // the repayment waits for bob's account
    const transfer = call(`${b.baseUrl}/loans/3/transfers`, { debtId: alicesDebt?.id, to: 'chen', priceCents: 100 });
    await until(async () => (await probe.waiters()) === 2); // the transfer waits for the repayment (alice)
    await bob.release();
    expect([(await repayment).status, (await transfer).status]).toEqual([201, 201]);
  } finally {
    await bob.release();
  }
  expect((await loansOf(a)).every((loan) => loan.balanced)).toBe(true);
  expect(await totalMoney(db)).toBe(moneyBefore);
}

/**
 * Random customers of the loan desk (`LoanDeskJob.serveOne`: repayments and transfers of random loans) on every
 * instance at once, in rounds: no customer fails with anything but an HTTP answer (a deadlock or any database error
 * would be rethrown), the loans' locks were contended, every loan balances, no cent is lost, no account is negative.
 */
export async function expectDesksServeWithoutError(db: TestDatabase, instances: readonly SampleInstance[]) {
  const moneyBefore = await totalMoney(db);
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
  expect(failures).toEqual([]);

  const activity = instances.flatMap((instance) => instance.app.get(ActivityService).latest());
  const done = activity.filter((entry) => entry.outcome === 'done');
  expect(done.some((entry) => entry.what === 'repayment')).toBe(true);
  expect(done.some((entry) => entry.what === 'transfer')).toBe(true);
  expect(activity.some((entry) => entry.outcome === 'refused')).toBe(true); // the loans' locks were contended

  expect((await loansOf(instances[0]!)).map((loan) => [loan.id, loan.balanced])).toEqual([
    [1, true],
    [2, true],
    [3, true],
  ]);
  expect(await totalMoney(db)).toBe(moneyBefore); // no cent created or lost
  const [negative] = await db.query<{ n: string | number }>(
    'SELECT COUNT(*) AS n FROM investor_accounts WHERE balance_cents < 0',
  );
  expect(Number(negative?.n)).toBe(0);
}

/**
 * A transfer whose buyer cannot pay: the debt changed hands in the business transaction before the payment failed,
 * so the 409 must roll the sale back (the loan as it was, not a cent moved).
 */
export async function expectShortBuyerRolledBack(db: TestDatabase, a: SampleInstance): Promise<void> {
  const moneyBefore = await totalMoney(db);
  const loan = (await loansOf(a)).find((l) => l.id === 2);
  const debt = loan?.debts[0];
  const buyer = debt?.investor === 'emil' ? 'alice' : 'emil';
  const refused = await call<{ message: string }>(`${a.baseUrl}/loans/2/transfers`, {
    debtId: debt?.id,
    to: buyer,
    priceCents: 999_999_999,
  });
  expect(refused.status).toBe(409);
  expect(refused.body.message).toBe(`${buyer} cannot pay 999999999 cents`);
  expect((await loansOf(a)).find((l) => l.id === 2)).toEqual(loan);
  expect(await totalMoney(db)).toBe(moneyBefore);
}
