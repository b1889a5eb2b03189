import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { lockEntities } from './entities/lock-entities.factory.js';
import { LockHttpInterceptor } from './interceptors/lock-http.interceptor.js';
import type { LockModuleExtras } from './interfaces/index.js';
import {
  ConfigurableModuleClass,
  type LockModuleAsyncOptions,
  type LockModuleRootOptions,
} from './lock.module-definition.js';
import { LockAdminService } from './admin/lock-admin.service.js';
import { LockConfigurationError } from './errors/index.js';
import { LOCK_DATA_SOURCE, LOCK_TABLES } from './lock.constants.js';
import { resolveLockTables } from './store/lock-tables.util.js';
import {
  createJobRunStoreProvider,
  createLockAdminProvider,
  createLockStoreProvider,
  LOCK_ENGINE_PROVIDERS,
} from './lock.providers.js';
import { LockService } from './services/lock.service.js';
import { assertKnownKeys } from './utils/option-keys.util.js';
import { MODULE_EXTRAS_KEYS, MODULE_OPTIONS_KEYS } from './utils/resolve-lock-options.util.js';

/**
 * Named read/write locks with permits in the application's PostgreSQL, MySQL or MariaDB database.
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
  imports: [DiscoveryModule],
  providers: [...LOCK_ENGINE_PROVIDERS],
  exports: [LockService, LockAdminService],
})
export class LockModule extends ConfigurableModuleClass {
  /** Configures the module with options known up front. */
  static override forRoot(options: LockModuleRootOptions): DynamicModule {
    if (options !== null && typeof options === 'object') {
      assertKnownKeys('LockModule.forRoot() options', options, [...MODULE_OPTIONS_KEYS, ...MODULE_EXTRAS_KEYS]);
    }
    return withExtras(super.forRoot(options), options);
  }

  /** Configures the module from a factory, e.g. `{ imports: [ConfigModule], inject: [ConfigService], useFactory }`. */
  static override forRootAsync(options: LockModuleAsyncOptions): DynamicModule {
    if (options !== null && typeof options === 'object') {
      assertKnownKeys('LockModule.forRootAsync() options', options, [...ASYNC_KEYS, ...MODULE_EXTRAS_KEYS]);
    }
    return withExtras(super.forRootAsync(options), options);
  }
}

/** The keys of Nest's asynchronous module options (`ConfigurableModuleAsyncOptions`). */
const ASYNC_KEYS = ['imports', 'inject', 'useFactory', 'useClass', 'useExisting', 'provideInjectionTokensFrom'];

/** Adds what depends on the extras: the DataSource's entities and store, and the global HTTP interceptor. */
function withExtras(definition: DynamicModule, extras: LockModuleExtras): DynamicModule {
  if (extras.dialect !== undefined && extras.dialect !== 'postgres' && extras.dialect !== 'mysql') {
    throw new LockConfigurationError(`LockModule option dialect must be 'postgres' or 'mysql' (got ${String(extras.dialect)})`);
  }
  const dialect = extras.dialect ?? 'postgres';
  const tables = resolveLockTables({ schema: extras.schema, tablePrefix: extras.tablePrefix }, dialect);
  const interceptor: Provider[] =
    extras.mountHttpInterceptor === false ? [] : [{ provide: APP_INTERCEPTOR, useClass: LockHttpInterceptor }];
  return {
    ...definition,
    imports: [
      ...(definition.imports ?? []),
      TypeOrmModule.forFeature([...lockEntities({ ...tables, dialect })], extras.dataSource),
    ],
    providers: [
      ...(definition.providers ?? []),
      { provide: LOCK_DATA_SOURCE, useExisting: getDataSourceToken(extras.dataSource) },
      { provide: LOCK_TABLES, useValue: tables },
      createLockStoreProvider(extras.dataSource, dialect),
      createLockAdminProvider(extras.dataSource),
      createJobRunStoreProvider(extras.dataSource),
      ...interceptor,
    ],
  };
}
