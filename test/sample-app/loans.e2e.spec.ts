import type { LockedResponseBody, LockLogEntry, LockLostResponseBody } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LoanOperationEntity } from '../../sample-app/src/loans/loan-operation.entity.js';
import type { LoanView } from '../../sample-app/src/loans/loans.service.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { call, type SampleInstance, startSampleInstance } from './support/sample-instance.js';

interface OperationRow {
  kind: 'repayment' | 'transfer';
  stamp: string;
  started: number;
  finished: number;
}

/**
 * Seed 002 on the sample app: repayments (write lock on `loan:<id>`) and debt transfers (read lock on it), from two
 * instances at once. The business work records database start/finish times inside its transaction; a repayment's
 * interval must never meet another operation's, transfers may overlap each other, and the books must balance.
 */
describe('sample app, seed 002: repayments and debt transfers', () => {
  let db: TestDatabase;
  let a: SampleInstance;
  let b: SampleInstance;

  const loans = async (): Promise<LoanView[]> => (await call<LoanView[]>(`${a.baseUrl}/loans`)).body;
  const money = async (): Promise<number> => {
    const [row] = await db.query<{ total: number }>(
      `SELECT ((SELECT sum(balance_cents) FROM investor_accounts)
             + (SELECT sum(outstanding_cents) FROM loans))::int AS total`,
    );
    return row?.total ?? NaN;
  };
  const operations = (loanId: number) =>
    db.query<OperationRow>(
      `SELECT kind, stamp, extract(epoch FROM started_at) * 1000 AS started,
              extract(epoch FROM finished_at) * 1000 AS finished
       FROM loan_operations WHERE loan_id = $1 ORDER BY started_at`,
      [loanId],
    );

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    a = await startSampleInstance(db.url, { appId: 'loans-a', repaymentMs: 250, transferMs: 200 });
    b = await startSampleInstance(db.url, { appId: 'loans-b', repaymentMs: 250, transferMs: 200 });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });

  it('never overlaps a repayment with a transfer of the same loan, from two instances', async () => {
    const moneyBefore = await money();
    const statuses = { repayment: [] as number[], transfer: [] as number[] };
    const repay = (via: SampleInstance) =>
      call(`${via.baseUrl}/loans/1/repayments`, { amountCents: 1000 + Math.floor(Math.random() * 9000) }).then((r) =>
        statuses.repayment.push(r.status),
      );
    const transferAll = async (): Promise<void> => {
      const debts = (await loans()).find((loan) => loan.id === 1)?.debts ?? [];
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

    const ops = await operations(1);
    const overlaps = (x: OperationRow, y: OperationRow) => x.started < y.finished && y.started < x.finished;
    for (const repayment of ops.filter((op) => op.kind === 'repayment')) {
      const clash = ops.find((other) => other !== repayment && overlaps(repayment, other));
      expect(clash).toBeUndefined();
    }
    const transfers = ops.filter((op) => op.kind === 'transfer');
    expect(transfers.some((t, i) => transfers.slice(i + 1).some((u) => overlaps(t, u)))).toBe(true); // reads share

    const loan = (await loans()).find((l) => l.id === 1);
    expect(loan?.balanced).toBe(true); // the debts add up to what is outstanding: no lost update
    expect(await money()).toBe(moneyBefore); // no cent created or lost
  });

  it('records "business done" inside the business transaction, then the release', async () => {
    const done = await call<LoanOperationEntity>(`${b.baseUrl}/loans/2/repayments`, { amountCents: 5000 });
    expect(done.status).toBe(201);
    const entry = (await call<LockLogEntry[]>(`${a.baseUrl}/api/log?limit=50`)).body.find(
      (e) => e.stamp === done.body.stamp,
    );
    expect(entry).toMatchObject({ appId: 'loans-b', status: 'RELEASED', locks: [{ name: 'loan:2', mode: 'write' }] });
    const [acquired, businessDone, ended] = [entry?.acquiredAt, entry?.businessDoneAt, entry?.endedAt].map((t) =>
      t ? Date.parse(String(t)) : NaN,
    );
    expect(businessDone).toBeGreaterThanOrEqual(Date.parse(String(done.body.finishedAt)));
    expect(acquired).toBeLessThanOrEqual(businessDone ?? NaN);
    expect(businessDone).toBeLessThanOrEqual(ended ?? NaN);
  });

  it('answers 423 for a busy loan and leaves no business trace', async () => {
    const stamp = await a.locks.tryLocks([{ name: 'loan:3', mode: 'write' }]);
    try {
      const countBefore = (await operations(3)).length;
      const debt = (await loans()).find((l) => l.id === 3)?.debts[0];
      const refused = await call<LockedResponseBody>(`${b.baseUrl}/loans/3/transfers`, {
        debtId: debt?.id,
        to: debt?.investor === 'bob' ? 'dana' : 'bob',
        priceCents: 100,
      });
      expect(refused.status).toBe(423);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body.locks).toEqual([{ name: 'loan:3', mode: 'read' }]);
      expect((await call(`${b.baseUrl}/loans/3/repayments`, { amountCents: 100 })).status).toBe(423);
      expect(await operations(3)).toHaveLength(countBefore);
    } finally {
      await a.locks.releaseLocks(stamp);
    }
  });

  it('rolls the repayment back when the reaper frees its lock before "business done"', async () => {
    const before = (await loans()).find((l) => l.id === 3);
    const moneyBefore = await money();
    const countBefore = (await operations(3)).length;
    // Seed 002's reaper job, impatient: it frees any grant held longer than 100 ms (the repayment takes 250 ms).
    const reaper = await startSampleInstance(db.url, { appId: 'loans-reaper', maxHoldMs: 100, reaperIntervalMs: 50 });
    try {
      const answer = await call<LockLostResponseBody>(`${a.baseUrl}/loans/3/repayments`, { amountCents: 7777 });
      expect(answer.status).toBe(409);
      const { stamp } = answer.body;
      expect(answer.body.message).toContain(`stamp ${stamp} are lost`);
      const entry = (await call<LockLogEntry[]>(`${b.baseUrl}/api/log`)).body.find((e) => e.stamp === stamp);
      expect(entry).toMatchObject({
        status: 'REAPED',
        businessDoneAt: null,
        locks: [{ name: 'loan:3', mode: 'write' }],
      });
    } finally {
      await reaper.close();
    }
    expect((await loans()).find((l) => l.id === 3)).toEqual(before);
    expect(await money()).toBe(moneyBefore);
    expect(await operations(3)).toHaveLength(countBefore);
  });

  it('validates input before taking any lock', async () => {
    expect((await call(`${a.baseUrl}/loans/1/repayments`, { amountCents: -5 })).status).toBe(400);
    expect(
      (await call(`${a.baseUrl}/loans/1/transfers`, { debtId: 1, to: 'Robert; DROP', priceCents: 1 })).status,
    ).toBe(400);
    expect((await call(`${a.baseUrl}/loans/99/repayments`, { amountCents: 5 })).status).toBe(404);
    expect((await call(`${a.baseUrl}/loans/1/repayments`, { amountCents: 999_999_999 })).status).toBe(409);
    expect(await a.locks.getGrants()).toEqual([]);
  });
});
