import { setTimeout as sleep } from 'node:timers/promises';
import { GrantChecker } from '../support/grant-checker.js';
import { startDbSampler } from '../support/invariant-checker.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { stopLeftovers } from '../support/leftovers.js';

/** The checkers the fault suite relies on do see a breach: a fault test that finds none proves something. */
describe('the invariant checkers', () => {
  afterEach(stopLeftovers); // a failed test must not leave its load or sampler running
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  const insert = (name: string, mode: 'R' | 'W', stamp: number) =>
    db.query(`INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES ($1, $2, 'forged', $3)`, [name, mode, stamp]);

  it('the database sampler reports rows beyond the permits, and a reader with a writer', async () => {
    await db.query(`INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ('MANY', 'R', 2)`);
    const sampler = startDbSampler(db.url);
    await until(() => sampler.report.samples > 5);
    await sleep(50);
    expect(sampler.report.violations).toEqual([]); // an empty table, and rows within the permits, are fine
    await insert('MANY', 'R', 1);
    await insert('MANY', 'R', 2);
    await until(() => sampler.report.samples > 20);
    expect(sampler.report.violations).toEqual([]);
    await insert('MANY', 'R', 3);
    await insert('TWO', 'W', 4);
    await insert('TWO', 'W', 5);
    await insert('MIXED', 'W', 6);
    await insert('MIXED', 'R', 7);
    await until(() => new Set(sampler.report.violations).size >= 3);
    const report = await sampler.stop();
    expect(new Set(report.violations)).toEqual(
      new Set([
        'MANY: 3 readers > 2 in the database',
        'TWO: 2 writers > 1 in the database',
        'MIXED: a reader and a writer together in the database',
      ]),
    );
    await db.query('DELETE FROM locking');
  });

  it('the database sampler rides through a connection it loses', async () => {
    const sampler = startDbSampler(db.url);
    await until(() => sampler.report.samples > 5);
    await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ndl-test-sampler'`);
    await until(() => sampler.report.failedSamples > 0);
    const after = sampler.report.samples;
    await until(() => sampler.report.samples > after + 5);
    await insert('LATE', 'W', 8);
    await insert('LATE', 'W', 9);
    await until(() => sampler.report.violations.length > 0);
    await sampler.stop();
    await db.query('DELETE FROM locking');
  });

  it('the holder-side checker reports overlapping holders beyond the permits', () => {
    const checker = new GrantChecker((name) => (name === 'RR' ? { read: 2, write: 1 } : { read: 1, write: 1 }));
    checker.enter([{ name: 'RR', mode: 'read' }], 1);
    checker.enter([{ name: 'RR', mode: 'read' }], 2);
    expect(checker.violations).toEqual([]);
    checker.leave([{ name: 'RR', mode: 'read' }]);
    checker.enter([{ name: 'RR', mode: 'read' }], 3);
    expect(checker.violations).toEqual([]);
    checker.enter([{ name: 'RR', mode: 'read' }], 4);
    checker.enter([{ name: 'W', mode: 'write' }], 5);
    checker.enter([{ name: 'W', mode: 'write' }], 6);
    checker.enter([{ name: 'RR', mode: 'write' }], 7);
    expect(checker.violations).toHaveLength(4);
  });
});
