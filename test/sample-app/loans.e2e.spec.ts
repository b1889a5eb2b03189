import type { LockedResponseBody, LockLogEntry } from 'nestjs-db-locks';
import type { LoanOperationEntity } from '../../sample-app/src/loans/loan-operation.entity.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import {
  expectReapedRepaymentRolledBack,
  expectRepaymentsAloneOnTheirLoan,
  expectShortBuyerRolledBack,
  loanOperations,
  loansOf,
} from './support/loan-books.js';
import { call, type SampleInstance, startSampleInstance } from './support/sample-instance.js';

/**
 * Seed 002 on the sample app: repayments (write lock on `loan:<id>`) and debt transfers (read lock on it), from two
 * instances at once. The business work records database start/finish times inside its transaction; a repayment's
 * interval must never meet another operation's, transfers may overlap each other, and the books must balance.
 */
describe('sample app, seed 002: repayments and debt transfers', () => {
  let db: TestDatabase;
  let a: SampleInstance;
  let b: SampleInstance;

  const loans = () => loansOf(a);
  const operations = (loanId: number) => loanOperations(db, loanId);

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

  it('never overlaps a repayment with a transfer of the same loan, from two instances', () =>
    expectRepaymentsAloneOnTheirLoan(db, a, b));

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

  it('rolls the repayment back when the reaper frees its lock before "business done"', () =>
    expectReapedRepaymentRolledBack(db, a, b));

  it('answers 409 to a transfer the buyer cannot pay and rolls the sale back', () => expectShortBuyerRolledBack(db, b));

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
