import type { MigrationInterface } from 'typeorm';
import type { LockTablesOptions } from '../interfaces/index.js';
import { isDefaultLockTables, type LockTables, lockTablesLabel, resolveLockTables } from '../store/lock-tables.util.js';
import { LOCK_MIGRATIONS } from './index.js';

/** A migration class as TypeORM takes it (`migrations: [...]`). @publicApi */
export type LockMigrationClass = new () => MigrationInterface;

/** The classes of each place, made once: `lockMigrations()` called twice gives the same classes. */
const madeFor = new Map<string, readonly LockMigrationClass[]>();

/**
 * The lock migrations for lock tables in a schema of their own (PostgreSQL) or with a table prefix (MySQL/MariaDB):
 * the same migrations as `LOCK_MIGRATIONS`, every statement written for that place, recorded in TypeORM's migrations
 * table under names of their own (`locks.CreateLockTables1763683200000`, `app1_CreateLockTables1763683200000`), so
 * that several places in one database each run their migrations once. Without options: `LOCK_MIGRATIONS` itself.
 *
 * ```ts
 * TypeOrmModule.forRoot({ type: 'postgres', url, migrations: [...lockMigrations({ schema: 'locks' })], migrationsRun: true })
 * ```
 * @throws LockConfigurationError for a schema or prefix that is not a plain lowercase identifier.
 * @publicApi
 */
export function lockMigrations(options: LockTablesOptions = {}): readonly LockMigrationClass[] {
  const tables = resolveLockTables(options, undefined, 'lockMigrations() option');
  if (isDefaultLockTables(tables)) return LOCK_MIGRATIONS;
  const key = `${tables.schema ?? ''}/${tables.tablePrefix}`;
  let made = madeFor.get(key);
  if (!made) {
    made = Object.freeze(LOCK_MIGRATIONS.map((migration) => migrationIn(migration, tables)));
    madeFor.set(key, made);
  }
  return made;
}

/** A subclass of `migration` whose statements are written for `tables`, named after the place. */
function migrationIn(migration: (typeof LOCK_MIGRATIONS)[number], tables: LockTables): LockMigrationClass {
  const name = qualifiedMigrationName(migration.name, tables);
  const base = migration as unknown as new () => MigrationInterface;
  const placed = class extends base {
    constructor() {
      super();
      Object.defineProperty(this, 'name', { value: name, enumerable: true });
      Object.defineProperty(this, 'tables', { value: tables });
    }
  };
  Object.defineProperty(placed, 'name', { value: name });
  return placed;
}

/** `locks.CreateLockTables1763683200000`, `app1_CreateLockTables1763683200000`: the timestamp last, as TypeORM needs. */
function qualifiedMigrationName(name: string, tables: LockTables): string {
  return tables.schema === undefined ? `${tables.tablePrefix}${name}` : `${lockTablesLabel(tables)}.${name}`;
}
