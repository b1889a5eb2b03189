import { LockConfigurationError } from 'nestjs-db-locks';
import { createLockApp } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

describeOnMysql('PostgreSQL-only pooler options on MySQL/MariaDB', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  afterAll(() => db?.drop());

  it('refuses directUrl and pooler at start-up instead of ignoring them', async () => {
    for (const options of [{ directUrl: 'postgres://db-host/app' }, { pooler: 'transaction' as const }]) {
      const start = createLockApp(db.url, { appId: 'pooler-options', ...options });
      await expect(start).rejects.toThrow(LockConfigurationError);
      await expect(start).rejects.toThrow(/directUrl and pooler are for PostgreSQL/);
    }
  });
});
