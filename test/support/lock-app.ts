import { type DynamicModule, type INestApplicationContext, Module, type Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, LockService, type LockModuleOptions } from 'nestjs-db-locks';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** Options of one test instance: at least its `appId`. */
export type TestLockOptions = Partial<LockModuleOptions> & { appId: string };

/** A Nest application context wired the way a user wires it: TypeORM + schedule + LockModule.forRoot. */
export interface LockApp {
  readonly app: INestApplicationContext;
  readonly locks: LockService;
  close(): Promise<void>;
}

/** The imports every test application uses: TypeORM on `url` (its own pool), ScheduleModule, LockModule. */
export function lockAppImports(url: string, options: TestLockOptions, poolSize = 4): DynamicModule[] {
  return [
    TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: poolSize }, autoLoadEntities: true }),
    ScheduleModule.forRoot(),
    LockModule.forRoot(options),
  ];
}

/** Boots one application instance (one `appId`, its own connection pool) on `url`. */
export async function createLockApp(
  url: string,
  options: TestLockOptions,
  poolSize = 4,
  providers: Type[] = [],
): Promise<LockApp> {
  @Module({ imports: lockAppImports(url, options, poolSize), providers })
  class TestAppModule {}

  const moduleRef = await Test.createTestingModule({ imports: [TestAppModule] }).compile();
  moduleRef.useLogger(false);
  const app = await moduleRef.init();
  return { app, locks: app.get(LockService), close: () => app.close() };
}

/** A fresh database with application instances on it, closed and dropped together. */
export interface LockInstances {
  readonly db: TestDatabase;
  readonly apps: readonly LockApp[];
  close(): Promise<void>;
}

/** Creates a database and one instance per `appId` on it (in order). */
export async function openLockInstances(...appIds: string[]): Promise<LockInstances> {
  const db = await createTestDatabase();
  const apps: LockApp[] = [];
  for (const appId of appIds) apps.push(await createLockApp(db.url, { appId }));
  return {
    db,
    apps,
    close: async () => {
      await Promise.all(apps.map((app) => app.close()));
      await db.drop();
    },
  };
}
