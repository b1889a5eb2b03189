import type { Provider } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { LockModuleOptions } from './interfaces/index.js';
import { LOCK_TABLES, RESOLVED_LOCK_OPTIONS } from './lock.constants.js';
import { LOCK_MODULE_OPTIONS } from './lock.module-definition.js';
import { LockAdminService } from './admin/lock-admin.service.js';
import { createJobRunStore } from './jobs/job-runs.store.factory.js';
import { LockStore } from './store/lock.store.js';
import { createLockAdminStore, createLockStore } from './store/lock-stores.factory.js';
import { type LockDialect, lockDialectOf } from './store/lock-dialect.util.js';
import { LockConfigurationError } from './errors/index.js';
import type { LockTables } from './store/lock-tables.util.js';
import { LockTelemetry } from './telemetry/lock-telemetry.service.js';
import { resolveLockOptions, type ResolvedLockOptions } from './utils/resolve-lock-options.util.js';

/** Validates the user's options once and applies the defaults. @internal */
export const resolvedOptionsProvider: Provider = {
  provide: RESOLVED_LOCK_OPTIONS,
  useFactory: (options: LockModuleOptions, tables: LockTables) => resolveLockOptions(options, tables),
  inject: [LOCK_MODULE_OPTIONS, LOCK_TABLES],
};

/**
 * The store over the application's own DataSource (default or named), in its dialect; the DataSource is never
 * re-provided. @internal
 */
export function createLockStoreProvider(dataSource: string | undefined, dialect: LockDialect): Provider {
  return {
    provide: LockStore,
    useFactory: (ds: DataSource, options: ResolvedLockOptions, telemetry: LockTelemetry) => {
      const actual = lockDialectOf(ds);
      if (actual !== dialect) {
        throw new LockConfigurationError(
          `The lock DataSource is ${actual === 'mysql' ? 'MySQL/MariaDB' : 'PostgreSQL'}: configure ` +
            `LockModule.forRoot({ ..., dialect: '${actual}' }) (it picks the entities registered on the DataSource)`,
        );
      }
      return createLockStore(ds, options, telemetry);
    },
    inject: [getDataSourceToken(dataSource), RESOLVED_LOCK_OPTIONS, LockTelemetry],
  };
}

/** The admin service over the module's DataSource, acting as the module's `instance`. @internal */
export function createLockAdminProvider(dataSource?: string): Provider {
  return {
    provide: LockAdminService,
    useFactory: (ds: DataSource, options: ResolvedLockOptions, store: LockStore) =>
      new LockAdminService(
        createLockAdminStore(ds, options, store),
        options.instance,
        createJobRunStore(ds, options),
        options.tables,
      ),
    inject: [getDataSourceToken(dataSource), RESOLVED_LOCK_OPTIONS, LockStore],
  };
}
