import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, LockService, lockMigrations } from 'nestjs-db-locks';
import type { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * `autoLoadEntities: true` with `LockModule.forRoot({ schema })`: the entities the module registers are those of the
 * schema, and the migrations run by the DataSource (`migrationsRun`) create it. PostgreSQL only, in a file of its own:
 * `@nestjs/typeorm` keeps auto-loaded entities process-wide.
 */
describe('autoLoadEntities with a schema (PostgreSQL)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db?.drop());

  it('registers the entities of the schema and runs its migrations at start-up; grants there', async () => {
    @Module({
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: db.url,
          autoLoadEntities: true,
          migrations: [...lockMigrations({ schema: 'auto_locks' })],
          migrationsRun: true,
        }),
        ScheduleModule.forRoot(),
        LockModule.forRoot({ appId: 'auto', schema: 'auto_locks' }),
      ],
    })
    class AutoModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AutoModule] }).compile();
    moduleRef.useLogger(false);
    const app = await moduleRef.init();
    try {
      const dataSource = app.get<DataSource>(getDataSourceToken());
      const paths = dataSource.entityMetadatas.map((metadata) => metadata.tablePath).sort();
      expect(paths).toEqual([
        'auto_locks.locking',
        'auto_locks.locking_job',
        'auto_locks.locking_job_run',
        'auto_locks.locking_log',
        'auto_locks.locking_permissions',
      ]);
      const stamp = await app.get(LockService).tryLocks(['auto_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      expect(await db.query('SELECT lock_name FROM auto_locks.locking')).toEqual([{ lock_name: 'auto' }]);
      expect(await db.query("SELECT to_regclass('public.locking') AS t")).toEqual([{ t: null }]);
    } finally {
      await app.close();
    }
  });
});
