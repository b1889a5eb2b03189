import { hostname, userInfo } from 'node:os';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { LockAdminService } from '../admin/lock-admin.service.js';
import { lockEntities } from '../entities/lock-entities.factory.js';
import { LockConfigurationError } from '../errors/index.js';
import { type LockTables, resolveLockTables } from '../store/lock-tables.util.js';
import { toCliError, usageError } from './lock-cli.errors.js';
import { explainMissingTables } from './lock-cli.places.js';

/** How long connecting and each statement may take before the command gives up (exit code 3). @internal */
export const CLI_TIMEOUT_MS = 5000;

/** The options every command has (`--url`, `--json`). @internal */
export interface GlobalOptions {
  /** The database URL; `DATABASE_URL` when not given. */
  readonly url?: string;
  /** Print JSON only. */
  readonly json?: boolean;
  /** PostgreSQL: the schema of the lock tables; `LOCK_SCHEMA` when neither option is given. */
  readonly schema?: string;
  /** MySQL/MariaDB: the prefix of the lock tables; `LOCK_TABLE_PREFIX` when neither option is given. */
  readonly tablePrefix?: string;
}

/** A checked database URL and how messages name it (without its password). @internal */
export interface DatabaseTarget {
  readonly url: string;
  /** `host:port/database`, and the lock tables' schema or prefix when given. */
  readonly where: string;
  /** `mysql://` and `mariadb://` URLs reach MySQL or MariaDB, the others PostgreSQL. */
  readonly dialect: 'postgres' | 'mysql';
  /** Where the lock tables are (`--schema`, `--table-prefix`). */
  readonly tables: LockTables;
  /** How `tables` was chosen: by an option, by a variable, or neither (the default place). */
  readonly by: 'flag' | 'env' | 'default';
  /** The variables among `LOCK_SCHEMA` and `LOCK_TABLE_PREFIX` that are set (read only when no option is given). */
  readonly envSet: readonly string[];
}

/** The URL schemes the CLI accepts, and the dialect and default port of each. */
const SCHEMES: Record<string, { readonly dialect: 'postgres' | 'mysql'; readonly port: string }> = {
  'postgres:': { dialect: 'postgres', port: '5432' },
  'postgresql:': { dialect: 'postgres', port: '5432' },
  'mysql:': { dialect: 'mysql', port: '3306' },
  'mariadb:': { dialect: 'mysql', port: '3306' },
};

/**
 * The database to use: `--url`, else `DATABASE_URL`. A usage error (exit code 2) when there is none or it is not a
 * `postgres://`, `mysql://` or `mariadb://` URL, before any connection.
 * @internal
 */
export function databaseTarget(options: GlobalOptions, env: NodeJS.ProcessEnv = process.env): DatabaseTarget {
  const url = options.url ?? env.DATABASE_URL;
  if (!url) throw usageError('no database: set DATABASE_URL or pass --url postgres://user:password@host:5432/database');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError('the database URL is not a URL: expected postgres://user:password@host:5432/database');
  }
  const scheme = SCHEMES[parsed.protocol];
  if (!scheme) {
    throw usageError(`the database URL must start with postgres://, mysql:// or mariadb:// (got ${parsed.protocol}//)`);
  }
  // mysql2 knows the mysql:// scheme only.
  const driverUrl = scheme.dialect === 'mysql' ? url.replace(/^mariadb:/, 'mysql:') : url;
  const { tables, by, envSet } = tablesOf(options, env, scheme.dialect);
  const place =
    tables.schema !== undefined ? ` (schema ${tables.schema})` : tables.tablePrefix ? ` (tables ${tables.tablePrefix}*)` : '';
  return {
    url: driverUrl,
    where: `${parsed.hostname}:${parsed.port || scheme.port}${parsed.pathname}${place}`,
    dialect: scheme.dialect,
    tables,
    by,
    envSet,
  };
}

/** The names of the two ways to choose the lock tables' place: options on the command line, or variables. @internal */
export const PLACE_NAMES = {
  flag: { schema: '--schema', tablePrefix: '--table-prefix', kind: 'the option' },
  env: { schema: 'LOCK_SCHEMA', tablePrefix: 'LOCK_TABLE_PREFIX', kind: 'the variable' },
} as const;

/**
 * `--schema` / `--table-prefix`, else `LOCK_SCHEMA` / `LOCK_TABLE_PREFIX` (the options win: when either is given, the
 * variables are not read), checked: a usage error naming the option or the variable when invalid.
 */
function tablesOf(
  options: GlobalOptions,
  env: NodeJS.ProcessEnv,
  dialect: 'postgres' | 'mysql',
): Pick<DatabaseTarget, 'tables' | 'by' | 'envSet'> {
  const envSet = [PLACE_NAMES.env.schema, PLACE_NAMES.env.tablePrefix].filter((name) => Boolean(env[name]));
  const byFlag = options.schema !== undefined || options.tablePrefix !== undefined;
  const by = byFlag ? 'flag' : envSet.length > 0 ? 'env' : 'default';
  const given = byFlag
    ? { schema: options.schema, tablePrefix: options.tablePrefix }
    : { schema: env.LOCK_SCHEMA || undefined, tablePrefix: env.LOCK_TABLE_PREFIX || undefined };
  if (by !== 'default' && dialect === 'mysql' && given.schema !== undefined && given.tablePrefix === undefined) {
    const name = PLACE_NAMES[by].schema;
    throw usageError(
      `${name} is for PostgreSQL: on MySQL/MariaDB use ${PLACE_NAMES[by].tablePrefix} (e.g. ${example(by, 'tablePrefix', 'locks_')}), ` +
        'or name the database of the lock tables in the URL (there a schema is a database)',
    );
  }
  try {
    return { tables: resolveLockTables(given, dialect, 'the option'), by, envSet };
  } catch (error) {
    if (!(error instanceof LockConfigurationError) || by === 'default') throw error;
    throw usageError(renamed(error.message, by));
  }
}

/** `--schema locks` or `LOCK_SCHEMA=locks`: how a message shows a value given one way or the other. */
function example(by: 'flag' | 'env', option: 'schema' | 'tablePrefix', value: string): string {
  return by === 'flag' ? `${PLACE_NAMES.flag[option]} ${value}` : `${PLACE_NAMES.env[option]}=${value}`;
}

/** A message of `resolveLockTables` (written for `LockModule` options) with the names of the command line. */
function renamed(message: string, by: 'flag' | 'env'): string {
  return message
    .replace(/^the option/, PLACE_NAMES[by].kind) // 'the options' too
    .replace(/\b(schema|tablePrefix): '([^']*)'/g, (_, option: 'schema' | 'tablePrefix', value: string) => example(by, option, value))
    .replace(/\b(schema|tablePrefix)\b/g, (option) => PLACE_NAMES[by][option as 'schema' | 'tablePrefix'])
    .replace('omit the option', by === 'flag' ? 'omit --schema' : 'unset LOCK_SCHEMA');
}

/** `cli:<user>@<host>`: who the log names as the one who forced a release. @internal */
export function cliActor(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? 'unknown';
  }
  return `cli:${user}@${hostname()}`;
}

/** A TypeORM DataSource on `target` with short timeouts and a small pool; `extra` adds options (migrations). @internal */
export function cliDataSource(target: DatabaseTarget, extra: Partial<DataSourceOptions> = {}): DataSource {
  if (target.dialect === 'mysql') {
    return new DataSource({
      type: 'mysql',
      url: target.url,
      entities: [...lockEntities({ ...target.tables, dialect: 'mysql' })],
      logging: false,
      timezone: 'Z',
      connectTimeout: CLI_TIMEOUT_MS,
      poolSize: 2,
      ...extra,
    } as DataSourceOptions);
  }
  return new DataSource({
    type: 'postgres',
    url: target.url,
    entities: [...lockEntities(target.tables)],
    logging: false,
    poolSize: 2,
    extra: {
      connectionTimeoutMillis: CLI_TIMEOUT_MS,
      statement_timeout: CLI_TIMEOUT_MS,
      application_name: 'nestjs-db-locks cli',
    },
    ...extra,
  } as DataSourceOptions);
}

/**
 * Connects, runs `fn`, disconnects. Whatever fails on the way becomes a `CliError` (exit code 3 for the database).
 * @internal
 */
export async function withDataSource<T>(
  target: DatabaseTarget,
  fn: (dataSource: DataSource) => Promise<T>,
  extra: Partial<DataSourceOptions> = {},
): Promise<T> {
  const dataSource = cliDataSource(target, extra);
  try {
    await dataSource.initialize();
    return await fn(dataSource);
  } catch (error) {
    throw toCliError(await explainMissingTables(error, dataSource, target), target.where);
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
  }
}

/** Connects and runs `fn` with a `LockAdminService` acting as `cliActor()`. @internal */
export function withAdmin<T>(target: DatabaseTarget, fn: (admin: LockAdminService) => Promise<T>): Promise<T> {
  return withDataSource(target, (dataSource) =>
    fn(LockAdminService.create(dataSource, { actor: cliActor(), queryTimeoutMs: CLI_TIMEOUT_MS, ...target.tables })),
  );
}
