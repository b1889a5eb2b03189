import { runWaitingProperty, WAITING_RUN } from '../support/lock-waiting-property.harness.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

describeOnMysql('MySQL/MariaDB waiting, randomized: permits, progress while nothing is held, no waiter row left', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  afterAll(() => db?.drop());

  it('never exceeds permits, never stalls while nothing is held, and leaves no waiter row behind', async () => {
    // Rows a release handed a grant are held rows now, kept until that grant's release (not a waiter).
    const result = await runWaitingProperty(db, { ...WAITING_RUN, waitingRows: 'granted IS NULL' });
    expect(result.violations).toEqual([]);
    expect(result.grants).toBeGreaterThan(60);
    expect(result.waits).toBeGreaterThan(60);
  });
});
