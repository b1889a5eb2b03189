import { Entity, getMetadataArgsStorage } from 'typeorm';
import type { LockTablesOptions } from '../interfaces/index.js';
import { isDefaultLockTables, type LockTables, lockTablesLabel, resolveLockTables } from '../store/lock-tables.util.js';
import { LOCK_ENTITIES, LOCK_MYSQL_ENTITIES } from './index.js';

/** An entity class of the lock tables. @publicApi */
export type LockEntityClass = new () => object;

/** The entity classes of each place and dialect, made once (TypeORM keeps the metadata of every class it sees). */
const madeFor = new Map<string, readonly LockEntityClass[]>();

/**
 * The entities of the lock tables in a schema of their own (PostgreSQL) or with a table prefix (MySQL/MariaDB), for
 * `TypeOrmModule.forRoot({ entities })` when you list entities yourself (`LockModule.forRoot({ schema })` registers
 * them for `autoLoadEntities`). Subclasses of `LOCK_ENTITIES` / `LOCK_MYSQL_ENTITIES` with the same columns; without
 * `schema` or `tablePrefix`, those lists themselves.
 * @param options `dialect`: `'mysql'` for MySQL and MariaDB.
 * @throws LockConfigurationError for a schema or prefix that is not a plain lowercase identifier, or given to the
 *   other dialect.
 * @publicApi
 */
export function lockEntities(
  options: LockTablesOptions & { readonly dialect?: 'postgres' | 'mysql' } = {},
): readonly LockEntityClass[] {
  const dialect = options.dialect ?? 'postgres';
  const tables = resolveLockTables(options, dialect, 'lockEntities() option');
  const entities = dialect === 'mysql' ? LOCK_MYSQL_ENTITIES : LOCK_ENTITIES;
  if (isDefaultLockTables(tables)) return entities;
  const key = `${dialect}/${tables.schema ?? ''}/${tables.tablePrefix}`;
  let made = madeFor.get(key);
  if (!made) {
    made = Object.freeze(entities.map((entity) => entityIn(entity, tables)));
    madeFor.set(key, made);
  }
  return made;
}

/** A subclass of `entity` (its columns, indices and checks) on the table of the same name in `tables`. */
function entityIn(entity: LockEntityClass, tables: LockTables): LockEntityClass {
  const table = getMetadataArgsStorage().tables.find((args) => args.target === entity)?.name ?? entity.name;
  const placed = class extends entity {};
  Object.defineProperty(placed, 'name', { value: `${entity.name}_${lockTablesLabel(tables).replace(/_$/, '')}` });
  Entity({ name: `${tables.tablePrefix}${table}`, schema: tables.schema })(placed);
  return placed;
}
