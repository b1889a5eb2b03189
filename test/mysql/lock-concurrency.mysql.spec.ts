import { DROP_MYSQL_LOCK_PROCEDURES } from '../../lib/migrations/sql/mysql-lock.procedures.sql.js';
import { CONCURRENCY_RUN, runLockProperty, type PropertyRunOptions } from '../support/lock-property.harness.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

const RUN: PropertyRunOptions = { ...CONCURRENCY_RUN, attempts: 3000 };

// Both paths: one stored-procedure call per grant, and the statements one by one (the procedures' migration not run,
// as during a rolling deploy ahead of it).
describeOnMysql.each([
  ['the stored procedures', false],
  ['the statements one by one', true],
])('MySQL/MariaDB concurrency property through %s', (_path, statements) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMysqlTestDatabase();
    if (statements) for (const statement of DROP_MYSQL_LOCK_PROCEDURES) await db.query(statement);
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
