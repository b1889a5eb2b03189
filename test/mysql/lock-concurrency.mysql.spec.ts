import {
  DROP_ALL_MYSQL_LOCK_PROCEDURES,
  DROP_MYSQL_LOCK_PROCEDURES_V2,
} from '../../lib/migrations/sql/mysql-lock.procedures-v2.sql.js';
import {
  DROP_MYSQL_HAND_OVER_COLUMNS,
  DROP_MYSQL_HAND_OVER_RELEASES,
} from '../../lib/migrations/sql/mysql-lock-hand-over.sql.js';
import { CONCURRENCY_RUN, runLockProperty, type PropertyRunOptions } from '../support/lock-property.harness.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

const RUN: PropertyRunOptions = { ...CONCURRENCY_RUN, attempts: 3000 };

// Both paths: one stored-procedure call per grant, and the statements one by one (the procedures' migration not run,
// as during a rolling deploy ahead of it).
describeOnMysql.each([
  ['the stored procedures', []],
  // (Without the hand-over: its releases come with acquisitions that refuse a waiter handed a grant.)
  [
    "the procedures' first version (a database at the previous migration)",
    [...DROP_MYSQL_HAND_OVER_RELEASES, ...DROP_MYSQL_LOCK_PROCEDURES_V2, ...DROP_MYSQL_HAND_OVER_COLUMNS],
  ],
  ['the statements one by one', DROP_ALL_MYSQL_LOCK_PROCEDURES],
])('MySQL/MariaDB concurrency property through %s', (_path, downgrade: readonly string[]) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMysqlTestDatabase();
    for (const statement of downgrade) await db.query(statement);
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
