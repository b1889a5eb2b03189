import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockConfigurationError, LockModule } from 'nestjs-db-locks';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

// A file of its own: the entities LockModule registers stay in @nestjs/typeorm's process-wide storage, and the
// PostgreSQL ones registered here would reach every later MariaDB application of the same file.
describeOnMysql('LockModule on a MariaDB DataSource without dialect: mysql', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  afterAll(() => db?.drop());

  it('refuses to start, saying what to set', async () => {
    const boot = Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({ type: 'mariadb', url: db.url, timezone: 'Z' }),
        ScheduleModule.forRoot(),
        LockModule.forRoot({ appId: 'no-dialect' }),
      ],
    }).compile();
    await expect(boot).rejects.toThrow(LockConfigurationError);
    await expect(boot).rejects.toThrow(/dialect: 'mysql'/);
  });
});
