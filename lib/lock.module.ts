import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LOCK_ENTITIES } from './entities/index.js';
import {
  ConfigurableModuleClass,
  type LockModuleAsyncOptions,
  type LockModuleRootOptions,
} from './lock.module-definition.js';
import { createLockStoreProvider, resolvedOptionsProvider } from './lock.providers.js';
import { LockPermitsCache } from './services/lock-permits-cache.service.js';
import { LockService } from './services/lock.service.js';
import { LockTasksRegistrar } from './tasks/lock-tasks.registrar.js';

/**
 * Named read/write locks with permits in the application's PostgreSQL database.
 *
 * ```ts
 * @Module({
 *   imports: [
 *     TypeOrmModule.forRoot({ type: 'postgres', url, migrations: [...LOCK_MIGRATIONS], migrationsRun: true }),
 *     ScheduleModule.forRoot(),
 *     LockModule.forRoot({ appId: 'ws2-0' }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 * It uses the application's TypeORM DataSource (default, or `dataSource: 'name'`) and `SchedulerRegistry`; it never
 * calls `TypeOrmModule.forRoot()` or `ScheduleModule.forRoot()` itself.
 * @publicApi
 */
@Module({
  providers: [resolvedOptionsProvider, LockPermitsCache, LockService, LockTasksRegistrar],
  exports: [LockService],
})
export class LockModule extends ConfigurableModuleClass {
  /** Configures the module with options known up front. */
  static override forRoot(options: LockModuleRootOptions): DynamicModule {
    return withDataSource(super.forRoot(options), options.dataSource);
  }

  /** Configures the module from a factory, e.g. `{ imports: [ConfigModule], inject: [ConfigService], useFactory }`. */
  static override forRootAsync(options: LockModuleAsyncOptions): DynamicModule {
    return withDataSource(super.forRootAsync(options), options.dataSource);
  }
}

function withDataSource(definition: DynamicModule, dataSource: string | undefined): DynamicModule {
  return {
    ...definition,
    imports: [...(definition.imports ?? []), TypeOrmModule.forFeature([...LOCK_ENTITIES], dataSource)],
    providers: [...(definition.providers ?? []), createLockStoreProvider(dataSource)],
  };
}
