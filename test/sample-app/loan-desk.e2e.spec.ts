import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { expectCrossingWithoutDeadlock, expectDesksServeWithoutError } from './support/loan-books.js';
import { type AccountLockProbe, postgresAccountLockProbe } from './support/row-lock-probe.js';
import { type SampleInstance, startSampleInstance } from './support/sample-instance.js';

/**
 * The sample's loan desk on three instances at once. Repayments and debt transfers of *different* loans run in
 * parallel (each holds only its own loan's lock) and all of them move money between the same investor accounts:
 * the business transactions must take those rows in one fixed order, or PostgreSQL aborts one of two crossing
 * transactions with `deadlock detected` (40P01).
 */
describe('sample app: the loan desk on three instances', () => {
  let db: TestDatabase;
  let instances: SampleInstance[] = [];
  let probe: AccountLockProbe;

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    // One after the other: the first one runs the migrations.
    for (const appId of ['desk-1', 'desk-2', 'desk-3']) {
      instances.push(await startSampleInstance(db.url, { appId, repaymentMs: 30, transferMs: 20 }));
    }
    probe = await postgresAccountLockProbe(db.url);
  });
  afterAll(async () => {
    await probe?.close();
    for (const instance of instances.reverse()) await instance.close();
    instances = [];
    await db?.drop();
  });

  it('lets a repayment and a transfer of two loans cross on shared investors without a deadlock', () =>
    expectCrossingWithoutDeadlock(db, [instances[0]!, instances[1]!], probe));

  it('serves random customers on three instances at once with no error and the books balanced', () =>
    expectDesksServeWithoutError(db, instances));
});
