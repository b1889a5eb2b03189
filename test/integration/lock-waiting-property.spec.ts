import { runWaitingProperty, WAITING_RUN } from '../support/lock-waiting-property.harness.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('waiting, randomized (DESIGN.md invariants 1 and 8)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('never exceeds permits, never stalls while nothing is held, and leaves no waiter row behind', async () => {
    const result = await runWaitingProperty(db, { ...WAITING_RUN, waitingRows: 'granted IS NULL' });
    expect(result.violations).toEqual([]);
    expect(result.grants).toBeGreaterThan(60);
    expect(result.waits).toBeGreaterThan(60);
  });
});
