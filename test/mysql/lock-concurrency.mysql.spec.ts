import { CONCURRENCY_RUN, runLockProperty, type PropertyRunOptions } from '../support/lock-property.harness.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

const RUN: PropertyRunOptions = { ...CONCURRENCY_RUN, attempts: 3000 };

describeOnMysql('MySQL/MariaDB concurrency property: no over-grant, no partial group, under real concurrent clients', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  afterAll(() => db?.drop());

  it('never over-grants, never grants part of a group, and leaves nothing behind', async () => {
    const result = await runLockProperty(db, RUN);
    expect(result.violations).toEqual([]);
    expect(result.attempts).toBeGreaterThanOrEqual(RUN.attempts);
    // Real contention happened: many grants, and many refusals.
    expect(result.grants).toBeGreaterThan(RUN.attempts / 10);
    expect(result.grants).toBeLessThan(result.attempts);
    expect(result.leftoverRows).toBe(0);
  });
});
