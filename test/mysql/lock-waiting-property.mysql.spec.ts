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
    const result = await runWaitingProperty(db, WAITING_RUN);
    expect(result.violations).toEqual([]);
    expect(result.grants).toBeGreaterThan(60);
    expect(result.waits).toBeGreaterThan(60);
  });
});
