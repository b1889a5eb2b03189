import type { Provider } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { LockModuleOptions } from './interfaces/index.js';
import { LOCK_DATA_SOURCE, LOCK_TABLES, RESOLVED_LOCK_OPTIONS } from './lock.constants.js';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition.js';
import { LockAdminService } from './admin/lock-admin.service.js';
import { JobRunStore } from './store/job-runs.store.js';
import { LockStore } from './store/lock.store.js';
import { createJobRunStore, createLeaderTermStore, createLockAdminStore, createLockStore } from './store/lock-stores.factory.js';
import { type LockDialect, lockDialectOf } from './store/lock-dialect.util.js';
import { LockConfigurationError } from './errors/index.js';
import { type LockTables, resolveLockTables } from './store/lock-tables.util.js';
import { LockTelemetry } from './telemetry/lock-telemetry.service.js';
import { lockTelemetryProvider } from './telemetry/lock-telemetry.provider.js';
import { LockExplorer } from './explorer/lock.explorer.js';
import { LeaderExplorer } from './explorer/leader.explorer.js';
import { LeaderService } from './leader/leader.service.js';
import { LeaderTermStore } from './store/leader-terms.store.js';
import { LockJobs } from './jobs/lock-jobs.service.js';
import { InstanceLock } from './services/instance-lock.service.js';
import { LockAcquisitions } from './services/lock-acquisitions.service.js';
import { LockDataSources } from './services/lock-data-sources.service.js';
import { LockTransactionRunners } from './services/lock-transaction-runners.service.js';
import { LockHealthCheck } from './services/lock-health.service.js';
import { LockLeases } from './services/lock-leases.service.js';
import { LockNotifications } from './services/lock-notifications.service.js';
import { LockOwnDataSource } from './services/lock-own-data-source.js';
import { LockPermitsCache } from './services/lock-permits-cache.service.js';
import { LockReaper } from './services/lock-reaper.service.js';
import { LockService } from './services/lock.service.js';
import { LockStartup } from './services/lock-startup.service.js';
import { LockedCallsTracker } from './services/locked-calls.tracker.js';
import { LockTasksRegistrar } from './tasks/lock-tasks.registrar.js';
import { resolveLockOptions, type ResolvedLockOptions } from './utils/resolve-lock-options.util.js';

/** Validates the user's options once and applies the defaults. @internal */
export const resolvedOptionsProvider: Provider = {
  provide: RESOLVED_LOCK_OPTIONS,
  useFactory: (options: LockModuleOptions, tables: LockTables) => resolveLockOptions(options, tables),
  inject: [LOCK_MODULE_OPTIONS, LOCK_TABLES],
};

/**
 * The store over the module's DataSource (`LOCK_DATA_SOURCE`: the application's, default or named, or the library's
 * own with `url`), in its dialect. @internal
 */
export function createLockStoreProvider(dialect: LockDialect | undefined, ownDataSource: boolean): Provider {
  return {
    provide: LockStore,
    useFactory: (ds: DataSource, options: ResolvedLockOptions, telemetry: LockTelemetry) => {
      if (!ownDataSource && options.url !== undefined) {
        throw new LockConfigurationError(
          'LockModule option url shapes the module (it opens a DataSource of its own instead of using TypeORM\'s): give ' +
            'LockModule.forRootAsync({ ownConnection: true, useFactory, ... }) when its factory returns url',
        );
      }
      const actual = lockDialectOf(ds);
      // forRootAsync({ ownConnection }): the URL's scheme decides, and the tables' place must suit it.
      if (dialect === undefined) resolveLockTables(options.tables, actual);
      else if (actual !== dialect) {
        throw new LockConfigurationError(
          `The lock DataSource is ${actual === 'mysql' ? 'MySQL/MariaDB' : 'PostgreSQL'}: configure ` +
            `LockModule.forRoot({ ..., dialect: '${actual}' }) (it picks the entities registered on the DataSource)`,
        );
      }
      return createLockStore(ds, options, telemetry);
    },
    inject: [LOCK_DATA_SOURCE, RESOLVED_LOCK_OPTIONS, LockTelemetry],
  };
}

/** The run history of scheduled jobs over the module's DataSource, in its dialect. @internal */
export const jobRunStoreProvider: Provider = {
  provide: JobRunStore,
  useFactory: (ds: DataSource, options: ResolvedLockOptions) => createJobRunStore(ds, options),
  inject: [LOCK_DATA_SOURCE, RESOLVED_LOCK_OPTIONS],
};

/** The terms of leader election over the module's DataSource, in its dialect. @internal */
export const leaderTermStoreProvider: Provider = {
  provide: LeaderTermStore,
  useFactory: (ds: DataSource, options: ResolvedLockOptions) => createLeaderTermStore(ds, options),
  inject: [LOCK_DATA_SOURCE, RESOLVED_LOCK_OPTIONS],
};

/** The admin service over the module's DataSource, acting as the module's `instance`. @internal */
export const lockAdminProvider: Provider = {
  provide: LockAdminService,
  useFactory: (ds: DataSource, options: ResolvedLockOptions, store: LockStore) =>
    new LockAdminService(
      createLockAdminStore(ds, options, store),
      options.instance,
      createJobRunStore(ds, options),
      options.tables,
    ),
  inject: [LOCK_DATA_SOURCE, RESOLVED_LOCK_OPTIONS, LockStore],
};

/**
 * The library's own DataSource (`url`), opened before anything uses it and closed at shutdown, then provided as the
 * module's DataSource. @internal
 */
export const OWN_DATA_SOURCE_PROVIDERS: readonly Provider[] = [
  {
    provide: LockOwnDataSource,
    useFactory: (options: ResolvedLockOptions) => LockOwnDataSource.open(options),
    inject: [RESOLVED_LOCK_OPTIONS],
  },
  { provide: LOCK_DATA_SOURCE, useFactory: (own: LockOwnDataSource) => own.dataSource, inject: [LockOwnDataSource] },
];

/**
 * The providers of the lock engine whatever its store: the module adds the store, the admin service and the
 * DataSource they run on. @internal
 */
export const LOCK_ENGINE_PROVIDERS: readonly Provider[] = [
  resolvedOptionsProvider,
  lockTelemetryProvider,
  LockPermitsCache,
  LockLeases,
  LockedCallsTracker,
  InstanceLock,
  LockReaper,
  LockNotifications,
  LockHealthCheck,
  LockDataSources,
  LockTransactionRunners,
  LockAcquisitions,
  LockStartup,
  LockService,
  LockJobs,
  LockTasksRegistrar,
  LockExplorer,
  LeaderService,
  LeaderExplorer,
];
