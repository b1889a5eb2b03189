import { CREATE_LOCK_SCHEMA } from '../../lib/migrations/sql/postgres-lock.schema.sql.js';
import { UPGRADE_LOCK_SCHEMA_V2 } from '../../lib/migrations/sql/postgres-lock.schema-v2.sql.js';
import { CONCURRENCY_RUN, runLockProperty } from '../support/lock-property.harness.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const RUN = CONCURRENCY_RUN;

describe('concurrency property: invariants 1-2 under real concurrent clients', () => {
  const databases: TestDatabase[] = [];
  afterAll(() => Promise.all(databases.map((db) => db.drop())));

  it('never over-grants, never grants part of a group, and leaves nothing behind', async () => {
    const db = await createTestDatabase();
    databases.push(db);
    const result = await runLockProperty(db, RUN);
    expect(result.violations).toEqual([]);
    expect(result.attempts).toBeGreaterThanOrEqual(RUN.attempts);
    // Real contention happened: many grants, and many refusals.
    expect(result.grants).toBeGreaterThan(RUN.attempts / 10);
    expect(result.grants).toBeLessThan(result.attempts);
    expect(result.leftoverRows).toBe(0);
  });

  it.each([
    ['an off-by-one permits check', (sql: string) => sql.replace('>= v_permits', '> v_permits')],
    ['a check that ignores the other mode', (sql: string) => sql.replace('count(*) FILTER (WHERE h.mode <> v_mode) > 0', 'false')],
    [
      'acquisitions that are not serialised',
      (sql: string) => sql.replaceAll('advisory_xact_lock(', 'advisory_xact_lock_shared('),
    ],
  ])('the checker catches a deliberately broken engine: %s', async (_label, breakIt) => {
    const db = await createTestDatabase({ migrate: false });
    databases.push(db);
    // The shipped schema with the current functions, one of them broken.
    for (const statement of [...CREATE_LOCK_SCHEMA, ...UPGRADE_LOCK_SCHEMA_V2]) {
      await db.query(breakIt(statement));
    }
    const result = await runLockProperty(db, { ...RUN, attempts: 1500 });
    expect(result.violations.length).toBeGreaterThan(0);
  });
});
