import type { DataSource } from 'typeorm';
import { LockTablesMissingError } from '../errors/index.js';
import { isDefaultLockTables } from '../store/lock-tables.util.js';
import { SELECT_LOCK_PLACES as MYSQL_LOCK_PLACES } from '../store/mysql/mysql-lock-admin.queries.sql.js';
import { SELECT_LOCK_PLACES as POSTGRES_LOCK_PLACES } from '../store/postgres/postgres-lock-admin.queries.sql.js';
import { type DatabaseTarget, PLACE_NAMES } from './lock-cli.connection.js';
import { CliError, EXIT } from './lock-cli.errors.js';

/**
 * Where the lock tables of the database are, when the place the command line was told to use (`--schema`,
 * `--table-prefix`, `LOCK_SCHEMA`, `LOCK_TABLE_PREFIX`, or none of them) has none: so that it names the option that
 * selects them instead of advising `migrate`, which would create a second, unused set. On PostgreSQL every schema of
 * the URL's database is searched; on MySQL/MariaDB every table prefix of the URL's database (another database is
 * another URL, and often another application's).
 */

/** A place of the database that has the lock tables. @internal */
export interface FoundPlace {
  /** The schema (PostgreSQL) or the table prefix (MySQL/MariaDB, '' for none). */
  readonly place: string;
  /** The place that neither option selects: the `search_path`'s schema, or no prefix. */
  readonly isDefault: boolean;
}

/** The lock tables of the database: whether the chosen place has them, and the other places that have them. @internal */
export interface LockPlaces {
  readonly here: boolean;
  readonly elsewhere: readonly FoundPlace[];
}

/** Looks for the lock tables in every place of the connected database. @internal */
export async function findLockPlaces(dataSource: DataSource, target: DatabaseTarget): Promise<LockPlaces> {
  if (target.dialect === 'mysql') {
    const rows: Array<{ place: string }> = await dataSource.query(MYSQL_LOCK_PLACES);
    const found = rows.map((row) => ({ place: String(row.place), isDefault: row.place === '' }));
    const chosen = target.tables.tablePrefix;
    return { here: found.some((f) => f.place === chosen), elsewhere: found.filter((f) => f.place !== chosen) };
  }
  const rows: Array<{ place: string; is_default: boolean }> = await dataSource.query(POSTGRES_LOCK_PLACES);
  const found = rows.map((row) => ({ place: row.place, isDefault: row.is_default }));
  const chosen = target.tables.schema;
  const isChosen = (f: FoundPlace): boolean => (chosen === undefined ? f.isDefault : f.place === chosen);
  return { here: found.some(isChosen), elsewhere: found.filter((f) => !isChosen(f)) };
}

/** ` --schema locks` when the place was chosen by an option: what a suggested command must repeat. */
function repeatedOption(target: DatabaseTarget): string {
  if (target.by !== 'flag') return '';
  const { schema, tablePrefix } = target.tables;
  return schema !== undefined ? ` --schema ${schema}` : tablePrefix ? ` --table-prefix ${tablePrefix}` : '';
}

/** `the search_path` or `no table prefix`: how the messages name the default place. */
function defaultPlace(target: DatabaseTarget): string {
  return target.dialect === 'mysql' ? 'no table prefix' : 'the search_path';
}

/** The chosen place as messages name it: `host:5432/shop (schema locks)`, or `host:5432/shop (the search_path)`. */
function chosenPlace(target: DatabaseTarget): string {
  return isDefaultLockTables(target.tables) ? `${target.where} (${defaultPlace(target)})` : target.where;
}

/** `schema locks: add --schema locks or set LOCK_SCHEMA=locks`: a found place and how to choose it. */
function howToChoose(found: FoundPlace, target: DatabaseTarget): string {
  const option = target.dialect === 'mysql' ? 'tablePrefix' : 'schema';
  if (!found.isDefault) {
    const label = option === 'schema' ? `schema ${found.place}` : `table prefix ${found.place}`;
    return `${label}: add ${PLACE_NAMES.flag[option]} ${found.place} or set ${PLACE_NAMES.env[option]}=${found.place}`;
  }
  const label = option === 'schema' ? `schema ${found.place} (${defaultPlace(target)})` : defaultPlace(target);
  const given = target.tables.schema !== undefined ? PLACE_NAMES.flag.schema : PLACE_NAMES.flag.tablePrefix;
  const undo = [...(target.by === 'flag' ? [`omit ${given}`] : []), ...target.envSet.map((name) => `unset ${name}`)];
  return `${label}: ${undo.join(' and ')}`;
}

/**
 * The error of a command whose place has no lock tables: where they are and the option that selects them, or, when
 * the database has none anywhere, the advice to run `migrate`. Exit code 3.
 * @param creating true for `migrate`, which would have created the tables
 * @internal
 */
export function lockTablesElsewhereError(target: DatabaseTarget, places: LockPlaces, creating: boolean): CliError {
  if (places.elsewhere.length === 0) {
    return new CliError(
      `the lock tables are missing in ${target.where}: run \`nestjs-db-locks migrate${repeatedOption(target)}\``,
      EXIT.database,
    );
  }
  const found = places.elsewhere.map((f) => howToChoose(f, target)).join('; ');
  const message =
    creating
      ? `not creating a second set of lock tables in ${chosenPlace(target)}: this database has them in ${found}; ` +
        'or add --create-here to create a new, empty set here'
      : `no lock tables in ${chosenPlace(target)}, but this database has them in ${found}`;
  return new CliError(message, EXIT.database);
}

/**
 * `error`, or when it is a `LockTablesMissingError` and the database is still connected, the error that says where
 * the lock tables are (see `lockTablesElsewhereError`). Never fails: a failed search leaves `error` as it was.
 * @internal
 */
export async function explainMissingTables(error: unknown, dataSource: DataSource, target: DatabaseTarget): Promise<unknown> {
  if (!(error instanceof LockTablesMissingError) || !dataSource.isInitialized) return error;
  try {
    return lockTablesElsewhereError(target, await findLockPlaces(dataSource, target), false);
  } catch {
    return error;
  }
}
