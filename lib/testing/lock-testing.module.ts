import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { getDataSourceToken } from '@nestjs/typeorm';
import { LockAdminService } from '../admin/lock-admin.service.js';
import { LockFence } from '../fence/lock-fence.service.js';
import { MemoryLockFence } from '../fence/memory-lock-fence.service.js';
import { LockHttpInterceptor } from '../interceptors/lock-http.interceptor.js';
import type { LockModuleOptions } from '../interfaces/index.js';
import { JobRunStore } from '../store/job-runs.store.js';
import { LeaderTermStore } from '../store/leader-terms.store.js';
import { MemoryLeaderTermStore } from '../store/memory/memory-leader-terms.store.js';
import { LeaderService } from '../leader/leader.service.js';
import { MemoryJobRunStore } from '../store/memory/memory-job-runs.store.js';
import { LOCK_DATA_SOURCE, LOCK_TABLES, RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { DEFAULT_LOCK_TABLES } from '../store/lock-tables.util.js';
import { LOCK_MODULE_OPTIONS } from '../lock.module-definition.js';
import { LOCK_ENGINE_PROVIDERS } from '../lock.providers.js';
import { LockLeases } from '../services/lock-leases.service.js';
import { LockService } from '../services/lock.service.js';
import { LockStore } from '../store/lock.store.js';
import { MemoryLockAdminStore } from '../store/memory/memory-lock-admin.store.js';
import { InMemoryLockDatabase } from '../store/memory/memory-lock.database.js';
import { MemoryLockStore } from '../store/memory/memory-lock.store.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';

/** What `LockTestingModule.forRoot` accepts: every `LockModuleOptions` (all optional) and the testing extras. */
export interface LockTestingModuleOptions extends Partial<LockModuleOptions> {
  /**
   * The in-memory tables. Give several modules the same one to test how instances (`appId`s) contend, as on one
   * database.
   * @default a new `InMemoryLockDatabase` of this module's own
   */
  readonly database?: InMemoryLockDatabase;
  /**
   * The TypeORM DataSource that `@WithLocks({ transaction })` methods open their transactions on, when the test
   * registers one with `TypeOrmModule` (`'default'` for the default DataSource). Without it, calling such a method
   * fails with `LockConfigurationError` (nothing is taken); the module still starts, and the class's other methods
   * work. The fence (`markBusinessDone`) is checked on the in-memory tables just before the commit, not inside the
   * transaction (see docs/testing.md).
   * @default none
   */
  readonly dataSource?: string;
  /**
   * Whether to mount `LockHttpInterceptor` as a global interceptor, as `LockModule` does (lock errors become 409,
   * 423, 400 and 503 responses).
   * @default true
   */
  readonly mountHttpInterceptor?: boolean;
  /**
   * Whether `LockService`, `LockAdminService` and `LockFence` are injectable everywhere without importing the module
   * again.
   * @default true
   */
  readonly isGlobal?: boolean;
}

/**
 * `LockModule` for unit tests: the real `LockService`, `@WithLocks` (with the HTTP interceptor's status codes),
 * `LockAdminService` and `LockFence` (its fence checks the grant in memory), over locks kept in memory (`InMemoryLockDatabase`) with the engine's semantics: groups granted
 * whole or not at all, permits per name and mode, writer preference in waiting order, wake-ups, leases with renewal,
 * expiry and the reaper, monotonic stamps, forced release and its log, one live instance per `appId`. No database, no
 * TypeORM configuration and no `ScheduleModule` are needed.
 *
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [LockTestingModule.forRoot()],
 *   providers: [LoanService],
 * }).compile();
 * await moduleRef.init();
 * ```
 * `appId` defaults to `'test'`. Initialise the module (`init()`, or `createNestApplication().init()`) before the
 * first call, and close it after the test (`close()`), as the library's tasks run on timers.
 * @publicApi
 */
@Module({})
export class LockTestingModule {
  /** The testing module, over `options.database` or tables of its own. */
  static forRoot(options: LockTestingModuleOptions = {}): DynamicModule {
    const {
      database = new InMemoryLockDatabase(),
      dataSource,
      mountHttpInterceptor = true,
      isGlobal = true,
      ...lockOptions
    } = options;
    const admin = new MemoryLockAdminStore(database);
    const providers: Provider[] = [
      { provide: LOCK_MODULE_OPTIONS, useValue: { appId: 'test', ...lockOptions } },
      { provide: LOCK_TABLES, useValue: DEFAULT_LOCK_TABLES },
      ...LOCK_ENGINE_PROVIDERS,
      // The module's own registry for its periodic tasks: the test's @Cron methods stay unscheduled.
      SchedulerRegistry,
      { provide: InMemoryLockDatabase, useValue: database },
      {
        provide: LockStore,
        useFactory: (resolved: ResolvedLockOptions) => new MemoryLockStore(database, resolved),
        inject: [RESOLVED_LOCK_OPTIONS],
      },
      {
        provide: LockFence,
        useFactory: (leases: LockLeases, resolved: ResolvedLockOptions, store: MemoryLockStore) =>
          new MemoryLockFence(leases, resolved, store),
        inject: [LockLeases, RESOLVED_LOCK_OPTIONS, LockStore],
      },
      { provide: JobRunStore, useFactory: () => new MemoryJobRunStore(database) },
      { provide: LeaderTermStore, useFactory: () => new MemoryLeaderTermStore(database) },
      {
        provide: LockAdminService,
        useFactory: (resolved: ResolvedLockOptions) =>
          new LockAdminService(admin, resolved.instance, new MemoryJobRunStore(database)),
        inject: [RESOLVED_LOCK_OPTIONS],
      },
    ];
    if (dataSource !== undefined) providers.push({ provide: LOCK_DATA_SOURCE, useExisting: getDataSourceToken(dataSource) });
    if (mountHttpInterceptor) providers.push({ provide: APP_INTERCEPTOR, useClass: LockHttpInterceptor });
    return {
      module: LockTestingModule,
      global: isGlobal,
      imports: [DiscoveryModule],
      providers,
      exports: [LockService, LockAdminService, LeaderService, LockFence, InMemoryLockDatabase],
    };
  }
}
