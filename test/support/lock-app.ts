import { type INestApplicationContext, Module, type Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockModule, LockService, type LockModuleOptions } from 'nestjs-db-locks';

/** A Nest application context wired the way a user wires it: TypeORM + schedule + LockModule.forRoot. */
export interface LockApp {
  readonly app: INestApplicationContext;
  readonly locks: LockService;
  close(): Promise<void>;
}

/** Boots one application instance (one `appId`, its own connection pool) on `url`. */
export async function createLockApp(
  url: string,
  options: Partial<LockModuleOptions> & { appId: string },
  poolSize = 4,
  providers: Type[] = [],
): Promise<LockApp> {
  @Module({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url, extra: { max: poolSize }, autoLoadEntities: true }),
      ScheduleModule.forRoot(),
      LockModule.forRoot(options),
    ],
    providers,
  })
  class TestAppModule {}

  const moduleRef = await Test.createTestingModule({ imports: [TestAppModule] }).compile();
  moduleRef.useLogger(false);
  const app = await moduleRef.init();
  return { app, locks: app.get(LockService), close: () => app.close() };
}
