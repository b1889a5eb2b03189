import type { Provider } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { LockModuleOptions } from './interfaces/index.js';
import { RESOLVED_LOCK_OPTIONS } from './lock.constants.js';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition.js';
import { LockAdminService } from './admin/lock-admin.service.js';
import { LockStore } from './store/lock.store.js';
import { PostgresLockAdminStore } from './store/postgres-lock-admin.store.js';
import { PostgresLockStore } from './store/postgres-lock.store.js';
import { PostgresStatementRunner } from './store/postgres-statement.runner.js';
import { LockTelemetry } from './telemetry/lock-telemetry.service.js';
import { resolveLockOptions, type ResolvedLockOptions } from './utils/resolve-lock-options.util.js';

/** Validates the user's options once and applies the defaults. @internal */
export const resolvedOptionsProvider: Provider = {
  provide: RESOLVED_LOCK_OPTIONS,
  useFactory: (options: LockModuleOptions) => resolveLockOptions(options),
  inject: [LOCK_MODULE_OPTIONS],
};

/** The store over the application's own DataSource (default or named); the DataSource is never re-provided. @internal */
export function createLockStoreProvider(dataSource?: string): Provider {
  return {
    provide: LockStore,
    useFactory: (ds: DataSource, options: ResolvedLockOptions, telemetry: LockTelemetry) =>
      new PostgresLockStore(ds, options, telemetry),
    inject: [getDataSourceToken(dataSource), RESOLVED_LOCK_OPTIONS, LockTelemetry],
  };
}

/** The admin service over the module's DataSource, acting as the module's `instance`. @internal */
export function createLockAdminProvider(dataSource?: string): Provider {
  return {
    provide: LockAdminService,
    useFactory: (ds: DataSource, options: ResolvedLockOptions) =>
      new LockAdminService(new PostgresLockAdminStore(new PostgresStatementRunner(ds, options), ds), options.instance),
    inject: [getDataSourceToken(dataSource), RESOLVED_LOCK_OPTIONS],
  };
}
