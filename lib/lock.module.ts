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
import { LockFence } from './fence/lock-fence.service.js';
import { LeaderService } from './leader/leader.service.js';
import { LockConfigurationError } from './errors/index.js';
import { LOCK_DATA_SOURCE, LOCK_TABLES } from './lock.constants.js';
import { resolveLockTables } from './store/lock-tables.util.js';
import {
  createLockStoreProvider,
  jobRunStoreProvider,
  leaderTermStoreProvider,
  LOCK_ENGINE_PROVIDERS,
  lockAdminProvider,
  OWN_DATA_SOURCE_PROVIDERS,
} from './lock.providers.js';
import type { LockDialect } from './store/lock-dialect.util.js';
import { parseLockDatabaseUrl } from './utils/lock-url.util.js';
import { LockService } from './services/lock.service.js';
import { assertKnownKeys } from './utils/option-keys.util.js';
import { migrationsRunOption, MODULE_EXTRAS_KEYS, MODULE_OPTIONS_KEYS } from './utils/resolve-lock-options.util.js';

/**
 * Named read/write locks with permits in the application's PostgreSQL, MySQL or MariaDB database.
 * With `forRoot({ appId, url })` (or `forRootAsync({ ownConnection: true, useFactory })` returning `url`) it opens a
 * DataSource of its own and the application needs no TypeORM (docs/data-layers.md); otherwise:
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
  providers: [...LOCK_ENGINE_PROVIDERS, LockFence],
  exports: [LockService, LockAdminService, LockFence, LeaderService],
})
export class LockModule extends ConfigurableModuleClass {
  /** Configures the module with options known up front. */
  static override forRoot(options: LockModuleRootOptions): DynamicModule {
    if (options !== null && typeof options === 'object') {
      assertKnownKeys('LockModule.forRoot() options', options, [...MODULE_OPTIONS_KEYS, ...MODULE_EXTRAS_KEYS]);
      migrationsRunOption(options); // it needs url, which shapes the module: refused before the module is built
    }
    return withExtras(super.forRoot(options), options, options?.url);
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
function withExtras(definition: DynamicModule, extras: LockModuleExtras, url?: unknown): DynamicModule {
  if (extras.dialect !== undefined && extras.dialect !== 'postgres' && extras.dialect !== 'mysql') {
    throw new LockConfigurationError(`LockModule option dialect must be 'postgres' or 'mysql' (got ${String(extras.dialect)})`);
  }
  const own = ownConnection(url, extras);
  const dialect = own ? own.dialect : (extras.dialect ?? 'postgres');
  const tables = resolveLockTables({ schema: extras.schema, tablePrefix: extras.tablePrefix }, dialect);
  const interceptor: Provider[] =
    extras.mountHttpInterceptor === false ? [] : [{ provide: APP_INTERCEPTOR, useClass: LockHttpInterceptor }];
  const dataSource: Provider[] =
    own ? [...OWN_DATA_SOURCE_PROVIDERS] : [{ provide: LOCK_DATA_SOURCE, useExisting: getDataSourceToken(extras.dataSource) }];
  return {
    ...definition,
    imports: [
      ...(definition.imports ?? []),
      ...(own ? [] : [TypeOrmModule.forFeature([...lockEntities({ ...tables, dialect })], extras.dataSource)]),
    ],
    providers: [
      ...(definition.providers ?? []),
      ...dataSource,
      { provide: LOCK_TABLES, useValue: tables },
      createLockStoreProvider(dialect, own !== undefined),
      lockAdminProvider,
      jobRunStoreProvider,
      leaderTermStoreProvider,
      ...interceptor,
    ],
  };
}

/**
 * Whether the library runs on a connection of its own (`url` given to `forRoot`, or `ownConnection` with the URL
 * from `forRootAsync`'s factory), and its dialect when the URL is known now; checked against the extras that name the
 * application's DataSource: `dataSource` excludes it, and `dialect` must agree with the URL's scheme.
 */
function ownConnection(url: unknown, extras: LockModuleExtras): { readonly dialect: LockDialect | undefined } | undefined {
  if (extras.ownConnection !== undefined && typeof extras.ownConnection !== 'boolean') {
    throw new LockConfigurationError(`LockModule option ownConnection must be a boolean (got ${String(extras.ownConnection)})`);
  }
  if (url === undefined && extras.ownConnection !== true) return undefined;
  if (url !== undefined && extras.ownConnection === false) {
    throw new LockConfigurationError('LockModule option url opens a connection of the library\'s own: remove ownConnection: false');
  }
  if (extras.dataSource !== undefined) {
    throw new LockConfigurationError(
      `LockModule options url (or ownConnection) and dataSource exclude each other: url opens a DataSource of the library's own, ` +
        `dataSource names the application's TypeORM DataSource "${extras.dataSource}"; give one of them`,
    );
  }
  if (url === undefined) return { dialect: extras.dialect }; // forRootAsync: the URL comes from the factory
  const { dialect } = parseLockDatabaseUrl(url);
  if (extras.dialect !== undefined && extras.dialect !== dialect) {
    throw new LockConfigurationError(
      `LockModule option dialect is '${extras.dialect}' but url reaches ${dialect === 'mysql' ? 'MySQL/MariaDB' : 'PostgreSQL'}: ` +
        'remove dialect (the scheme of url gives it)',
    );
  }
  return { dialect };
}
