import type { ForcedRelease, LockedResponseBody, LockLogEntry, LockWaiterInfo } from 'nestjs-db-locks';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import type { ConsoleState, PermitsView } from '../../sample-app/src/console/console-state.service.js';
import type { Ws1Build, Ws1Rates } from '../../sample-app/src/ws1/ws1-rates.service.js';
import type { Ws2Build, Ws2Prices } from '../../sample-app/src/ws2/ws2-prices.service.js';
import {
  expectCrossingWithoutDeadlock,
  expectDesksServeWithoutError,
  expectReapedRepaymentRolledBack,
  expectRepaymentsAloneOnTheirLoan,
  expectShortBuyerRolledBack,
  loansOf,
} from '../sample-app/support/loan-books.js';
import { type AccountLockProbe, mysqlAccountLockProbe } from '../sample-app/support/row-lock-probe.js';
import {
  call,
  eventually,
  grantOf,
  type SampleInstance,
  startSampleInstance,
} from '../sample-app/support/sample-instance.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

/**
 * The sample application on MariaDB, as `DATABASE_URL=mysql://… npm start` runs it: the same `AppModule`, the URL's
 * scheme picking the dialect (instance A on `mysql://`, instance B on `mariadb://`, one database). Its migrations
 * create the lock tables and its own; WS1's rebuild locks readers and WS2's group out, waits for another instance's
 * reader (woken by polling: MySQL has no LISTEN/NOTIFY), and the loans keep their books through racing repayments and
 * transfers, crossing operations on shared accounts (InnoDB row locks) and a reaped lock.
 */
describeOnMysql('sample app on MariaDB (DATABASE_URL=mysql://… / mariadb://…)', () => {
  let db: TestDatabase;
  let a: SampleInstance;
  let b: SampleInstance;
  let probe: AccountLockProbe;
  const tuning = { repaymentMs: 250, transferMs: 200, ws2RebuildMs: 1500 };

  beforeAll(async () => {
    db = await createMysqlTestDatabase({ migrate: false });
    // One after the other: the first one runs the migrations.
    a = await startSampleInstance(db.url, { appId: 'my-a', ...tuning });
    b = await startSampleInstance(db.url.replace(/^mysql:/, 'mariadb:'), { appId: 'my-b', ...tuning });
    probe = await mysqlAccountLockProbe(db.url);
  });
  afterAll(async () => {
    await probe?.close();
    await b?.close();
    await a?.close();
    await db?.drop();
  });
  afterEach(async () => {
    await eventually(async () => ((await a.locks.getGrants()).length === 0 ? true : undefined), 'every lock released');
  });

  it('runs its migrations on MariaDB and serves its seeded data, whichever scheme the URL has', async () => {
    expect(a.app.get(DataSource).options.type).toBe('mysql');
    expect(b.app.get(DataSource).options.type).toBe('mariadb');
    const migrations = await db.query<{ name: string }>('SELECT name FROM migrations');
    expect(migrations.map((row) => row.name).sort()).toEqual(
      [...LOCK_MIGRATIONS.map((migration) => migration.name), 'CreateSampleTables1763900000000'].sort(),
    );

    const loans = await loansOf(b);
    expect(loans.map((loan) => [loan.id, loan.debts.length, loan.balanced])).toEqual([
      [1, 3, true],
      [2, 2, true],
      [3, 3, true],
    ]);
    const rates = await call<Ws1Rates>(`${a.baseUrl}/ws1/rates`);
    expect(rates.status).toBe(200);
    expect(rates.body).toMatchObject({ generation: 1, generations: 1, complete: true });
    expect(rates.body.rates.find((rate) => rate.currency === 'USD')?.rate).toBe(1.085); // DECIMAL read as a number
    const prices = await call<Ws2Prices>(`${b.baseUrl}/ws2/prices`);
    expect(prices.status).toBe(200);
    expect(prices.body.ws1Generation).toBe(1);
    expect(prices.body.prices).toHaveLength(3 * 6);
  });

  it("answers 423 to WS1's readers and refuses WS2's group whole while WS1 rebuilds, then the new data", async () => {
    const before = await call<Ws1Rates>(`${b.baseUrl}/ws1/rates`);
    const rebuild = call<Ws1Build>(`${a.baseUrl}/ws1/rebuild`, {});
    await eventually(() => grantOf(b, 'WS1', 'write'), 'WS1_WRITE held by the rebuild');

    const ws2 = await call<LockedResponseBody>(`${b.baseUrl}/ws2/rebuild`, {});
    expect(ws2.status).toBe(423);
    expect(await grantOf(b, 'WS2', 'write')).toBeUndefined(); // all or nothing: WS2_WRITE was not kept

    const statuses: number[] = [];
    const rowCounts: number[] = [];
    while (await grantOf(b, 'WS1', 'write')) {
      const read = await call<Ws1Rates & LockedResponseBody>(`${b.baseUrl}/ws1/rates`);
      statuses.push(read.status);
      if (read.status === 423) expect(read.headers.get('retry-after')).toBe('2');
      else expect(read.body).toMatchObject({ complete: true, generations: 1 }); // never a half-built table
      const [raw] = await db.query<{ n: string | number }>('SELECT COUNT(*) AS n FROM ws1_rates');
      rowCounts.push(Number(raw?.n));
      await sleep(50);
    }
    expect(Math.min(...rowCounts)).toBeLessThan(6); // unlocked, the table is visibly half-built meanwhile
    expect(statuses.filter((s) => s === 423).length).toBeGreaterThanOrEqual(5);

    const built = await rebuild;
    expect(built.status).toBe(200);
    expect(built.body.generation).toBe((before.body.generation ?? 0) + 1);
    const ran = await call<Ws2Build>(`${b.baseUrl}/ws2/rebuild`, {});
    expect(ran.status).toBe(200);
    expect(ran.body.ws1Generation).toBe(built.body.generation);
    const prices = await call<Ws2Prices>(`${a.baseUrl}/ws2/prices`);
    expect(prices.body).toMatchObject({ ws1Generation: built.body.generation });
  });

  it("lets WS1's rebuild wait, listed as a waiter, for another instance's reader, and run once it left", async () => {
    const reader = await b.locks.tryLocks(['WS1_READ']); // a long report on instance B
    const rebuild = call<Ws1Build>(`${a.baseUrl}/ws1/rebuild`, {});
    const waiters = await eventually(async () => {
      const listed = (await call<LockWaiterInfo[]>(`${b.baseUrl}/api/waiters`)).body;
      return listed.length > 0 ? listed : undefined;
    }, 'the rebuild listed as a waiter');
    expect(waiters).toMatchObject([{ appId: 'my-a', locks: [{ name: 'WS1', mode: 'write' }] }]);
    expect(await grantOf(a, 'WS1', 'write')).toBeUndefined(); // waiting, not running
    expect((await call(`${a.baseUrl}/ws1/rates`)).status).toBe(423); // newcomers yield to the waiting writer

    await b.locks.releaseLocks(reader); // another process's release: instance A notices it by polling
    await eventually(() => grantOf(a, 'WS1', 'write'), 'the rebuild to take WS1_WRITE once the reader left', 2000);
    expect((await rebuild).status).toBe(200);
    expect((await call<LockWaiterInfo[]>(`${b.baseUrl}/api/waiters`)).body).toEqual([]);
  });

  it('serves the lock console: state, a permits row all instances follow, a force release in the log', async () => {
    const held = await a.locks.tryLocks(['LEDGER_WRITE']);
    const state = await call<ConsoleState>(`${b.baseUrl}/api/state`);
    expect(state.status).toBe(200);
    expect(state.body.appId).toBe('my-b');
    expect(state.body.grants).toMatchObject([
      { stamp: held, appId: 'my-a', locks: [{ name: 'LEDGER', mode: 'write' }] },
    ]);
    expect(state.body.permits.names.map((line) => line.name)).toEqual(
      expect.arrayContaining(['WS1', 'WS2', 'loan:1', 'loan:2', 'loan:3', 'LEDGER']),
    );

    expect((await call(`${b.baseUrl}/api/permits`, { name: 'WS1', mode: 'read', permits: 1 })).status).toBe(200);
    await eventually(
      async () => {
        const view = (await call<PermitsView>(`${a.baseUrl}/api/permits`)).body;
        return view.names.find((line) => line.name === 'WS1' && line.inForce.read === 1);
      },
      "instance A's permits cache to follow",
      2 * a.config.permitsRefreshIntervalMs + 500,
    );
    const reset = await call<PermitsView>(`${a.baseUrl}/api/permits`, { name: 'WS1', mode: 'read', permits: null });
    expect(reset.body.names.find((line) => line.name === 'WS1')?.rows).toEqual({ read: null, write: null });

    expect((await call(`${b.baseUrl}/api/grants/${held}/release`, {})).status).toBe(400); // no reason, no release
    const forced = await call<ForcedRelease>(`${b.baseUrl}/api/grants/${held}/release`, { reason: 'stuck ledger' });
    expect(forced.status).toBe(200);
    expect(forced.body).toMatchObject({ stamp: held, appId: 'my-a', reason: 'stuck ledger' });
    expect(await a.locks.getGrants()).toEqual([]);
    expect((await call(`${b.baseUrl}/api/grants/${held}/release`, { reason: 'again' })).status).toBe(404);
    const entry = (await call<LockLogEntry[]>(`${a.baseUrl}/api/log?limit=20`)).body.find((e) => e.stamp === held);
    expect(entry).toMatchObject({ status: 'FORCED', endedBy: forced.body.forcedBy, endReason: 'stuck ledger' });
  });

  // First of the loan tests: it starts from the seeded owners of the debts.
  it('lets a repayment and a transfer of two loans cross on shared accounts without an InnoDB deadlock', () =>
    expectCrossingWithoutDeadlock(db, [a, b], probe));

  it('never overlaps a repayment with a transfer of the same loan, from two instances, and loses no cent', () =>
    expectRepaymentsAloneOnTheirLoan(db, a, b));

  it('serves random loan customers on both instances at once with no error and the books balanced', () =>
    expectDesksServeWithoutError(db, [a, b]));

  it('rolls the repayment back when the reaper frees its lock before "business done"', () =>
    expectReapedRepaymentRolledBack(db, a, b));

  it('answers 409 to a transfer the buyer cannot pay and rolls the sale back', () => expectShortBuyerRolledBack(db, b));
  it('shows its leader role on MariaDB: the leader, its term and the candidate, and the hand-over when the leader stops', async () => {
    const c = await startSampleInstance(db.url, { appId: 'my-c', loanBookReportMs: 200, ...tuning });
    const d = await startSampleInstance(db.url, { appId: 'my-d', loanBookReportMs: 200, ...tuning });
    type Leaders = Array<{ role: string; leader: { appId: string; term: number } | null; term: number; candidates: Array<{ appId: string }> }>;
    const role = async () => (await call<Leaders>(`${a.baseUrl}/api/leaders`)).body.find((info) => info.role === 'loan-book-report');
    try {
      const first = await eventually(async () => {
        const info = await role();
        return info?.leader && info.candidates.length === 1 ? info : undefined;
      }, 'a leader and a candidate', 10_000);
      const [leader, candidate] = first.leader!.appId === 'my-c' ? [c, d] : [d, c];
      expect(first.candidates.map((x) => x.appId)).toEqual([candidate.config.appId]);
      expect(first.term).toBe(first.leader!.term);
      await leader.close();
      const next = await eventually(async () => {
        const info = await role();
        return info?.leader?.appId === candidate.config.appId ? info : undefined;
      }, 'the hand-over', 5000);
      expect(next).toMatchObject({ leader: { term: first.term + 1 }, term: first.term + 1, candidates: [] });
    } finally {
      await Promise.all([c.close(), d.close()]);
    }
  });
});
