import { LockConfigurationError } from '../errors/index.js';
import type { LockTablesOptions } from '../interfaces/index.js';
import type { LockDialect } from './lock-dialect.util.js';
import { NOTIFY_CHANNEL } from './lock-sql.constants.js';

/**
 * Where the lock tables live: a PostgreSQL schema, or a table prefix on MySQL and MariaDB. The SQL of the library is
 * written for the default (unqualified names, found through the `search_path` or in the connection's database); for
 * another place every statement is rewritten once by `inLockTables` (tables, sequences, functions, procedures, the
 * NOTIFY channel, the advisory-lock keys), and the default leaves every text exactly as it is.
 * @internal
 */
export interface LockTables {
  /** PostgreSQL: the schema of the lock tables and functions; undefined: wherever the `search_path` finds them. */
  readonly schema?: string;
  /** MySQL/MariaDB: the prefix of the lock tables and procedures; '' for none. */
  readonly tablePrefix: string;
}

/** The tables where they always were. @internal */
export const DEFAULT_LOCK_TABLES: LockTables = Object.freeze({ tablePrefix: '' });

/** PostgreSQL's longest identifier is 63 bytes; the NOTIFY channel `nestjs_db_locks:<schema>` must fit in it. */
const MAX_SCHEMA_LENGTH = 63 - NOTIFY_CHANNEL.length - 1;
/** MySQL's longest identifier is 64 characters; the longest name prefixed is 30 (`locking_permissions_permits_ck`). */
const MAX_PREFIX_LENGTH = 32;

/**
 * Validates the `schema` / `tablePrefix` options for `dialect` (when known); a `LockConfigurationError` naming the fix.
 * @param where how the message names the options (`LockModule option`, `lockMigrations()`, …)
 * @internal
 */
export function resolveLockTables(
  options: LockTablesOptions | undefined,
  dialect?: LockDialect,
  where = 'LockModule option',
): LockTables {
  const { schema } = options ?? {};
  const tablePrefix = options?.tablePrefix === '' ? undefined : options?.tablePrefix; // '' is no prefix
  if (schema === undefined && tablePrefix === undefined) return DEFAULT_LOCK_TABLES;
  if (schema !== undefined && tablePrefix !== undefined) {
    throw new LockConfigurationError(
      `${where}s schema and tablePrefix exclude each other: schema is for PostgreSQL, tablePrefix for MySQL/MariaDB`,
    );
  }
  if (schema !== undefined) {
    if (dialect === 'mysql') {
      throw new LockConfigurationError(
        `${where} schema is for PostgreSQL: on MySQL/MariaDB use tablePrefix (e.g. tablePrefix: '${safeExample(schema)}_')`,
      );
    }
    if (typeof schema !== 'string' || !/^[a-z_][a-z0-9_]*$/.test(schema) || schema.length > MAX_SCHEMA_LENGTH) {
      throw new LockConfigurationError(
        `${where} schema must be 1-${MAX_SCHEMA_LENGTH} lowercase letters, digits and _, not starting with a digit ` +
          `(got ${JSON.stringify(schema)}), e.g. schema: 'locks'`,
      );
    }
    if (schema.startsWith('pg_') || schema === 'public' || schema === 'information_schema') {
      throw new LockConfigurationError(
        `${where} schema cannot be '${schema}'` +
          (schema === 'public' ? ': omit the option for the tables of the search_path (usually public)' : ': it is reserved') +
          ", or give a schema of your own, e.g. schema: 'locks'",
      );
    }
    return Object.freeze({ schema, tablePrefix: '' });
  }
  if (dialect === 'postgres') {
    throw new LockConfigurationError(
      `${where} tablePrefix is for MySQL/MariaDB: on PostgreSQL use schema (e.g. schema: '${safeExample(tablePrefix)}')`,
    );
  }
  if (typeof tablePrefix !== 'string' || !/^[a-z][a-z0-9_]*$/.test(tablePrefix) || tablePrefix.length > MAX_PREFIX_LENGTH) {
    throw new LockConfigurationError(
      `${where} tablePrefix must be 1-${MAX_PREFIX_LENGTH} lowercase letters, digits and _, starting with a letter ` +
        `(got ${JSON.stringify(tablePrefix)}), e.g. tablePrefix: 'app1_'`,
    );
  }
  return Object.freeze({ tablePrefix });
}

/** An example of the other option, from a value given to the wrong one. */
function safeExample(value: unknown): string {
  const text = typeof value === 'string' ? value.toLowerCase().replace(/[^a-z0-9_]/g, '').replace(/_+$/, '') : '';
  return /^[a-z]/.test(text) ? text.slice(0, 20) : 'locks';
}

/** True when the tables are where they always were (no option given). @internal */
export function isDefaultLockTables(tables: LockTables): boolean {
  return tables.schema === undefined && tables.tablePrefix === '';
}

/** `locks` or `app1_`, '' by default: how names and messages tell the places apart. @internal */
export function lockTablesLabel(tables: LockTables): string {
  return tables.schema ?? tables.tablePrefix;
}

/** The NOTIFY channel of the lock engine in `tables` (PostgreSQL): each schema wakes its own waiters only. @internal */
export function lockNotifyChannel(tables: LockTables): string {
  return tables.schema === undefined ? NOTIFY_CHANNEL : `${NOTIFY_CHANNEL}:${tables.schema}`;
}

/**
 * The name of a prepared statement for `tables`: a connection prepares a name once, so two modules with different
 * schemas on one pool must not share a name for two texts. @internal
 */
export function lockStatementName(name: string, tables: LockTables): string {
  return tables.schema === undefined ? name : `${name}@${tables.schema}`;
}

/** The tables both dialects share. */
const LOCK_TABLE_NAMES = [
  'locking',
  'locking_log',
  'locking_waiters',
  'locking_permissions',
  'locking_instances',
  'locking_job_run',
  'locking_job_pause',
  'locking_job_action',
  'locking_job',
  'locking_leaders',
];

/** The objects of the lock engine on PostgreSQL (tables, sequences, functions), qualified with the schema. */
const POSTGRES_OBJECTS = [
  ...LOCK_TABLE_NAMES,
  'locking_stamp_seq',
  'locking_waiter_seq',
  'locking_try_acquire',
  'locking_try_acquire_one',
  'locking_wait_acquire',
  'locking_wait_acquire_one',
  'locking_release',
  'locking_release_one',
  'locking_renew',
  'locking_reap',
  'locking_recover',
  'locking_notify_freed',
  'locking_hand_over',
  'locking_reap_lapsed',
  'locking_permissions_changed',
  'locking_force_release',
  'locking_claim_job_tick',
  'locking_claim_controlled_tick',
  'locking_claim_job_request',
];
const POSTGRES_OBJECT = new RegExp(`\\b(${POSTGRES_OBJECTS.join('|')})\\b`, 'g');

/** The tables and procedures of the lock engine on MySQL and MariaDB, prefixed. */
const MYSQL_OBJECTS = [
  ...LOCK_TABLE_NAMES,
  'locking_names',
  'locking_doorbells',
  'locking_doorbell_rings',
  'locking_try_acquire',
  'locking_try_acquire_one',
  'locking_try_acquire_batch',
  'locking_release',
  'locking_release_quiet',
];
const MYSQL_OBJECT = new RegExp(`\\b(${MYSQL_OBJECTS.join('|')})\\b`, 'g');
/** MySQL 8 names CHECK constraints per database: two prefixes in one database need their own. */
const MYSQL_CONSTRAINT = /\bCONSTRAINT (locking\w*)/g;

/** The transaction advisory locks of `locking_try_acquire` (PostgreSQL) and the key of an app id's instance lock. */
const ADVISORY_NAMESPACE = /\b1819239275\b/g;
const APP_ID_KEY = /hashtextextended\(\$1, 1819240297\)/g;
/** The key of an app id's instance lock on MySQL (`GET_LOCK`). */
const MYSQL_APP_ID_KEY = /CONCAT\(DATABASE\(\), CHAR\(0\), \?\)/g;

/** Rewritten texts per place (the texts are the library's own: a bounded set). */
const rewritten = new Map<string, Map<string, string>>();
const MAX_CACHED = 5000;

/**
 * `sql`, a statement of the library written for the default place, for the lock tables in `tables` (`sql` itself for
 * the default). Only the library's own texts go through here (values are always parameters). @internal
 */
export function inLockTables(sql: string, tables: LockTables): string {
  if (isDefaultLockTables(tables)) return sql;
  const label = `${tables.schema ?? ''}/${tables.tablePrefix}`;
  let cache = rewritten.get(label);
  if (!cache) rewritten.set(label, (cache = new Map()));
  const cached = cache.get(sql);
  if (cached !== undefined) return cached;
  const text = tables.schema === undefined ? forMysql(sql, tables.tablePrefix) : forPostgres(sql, tables.schema);
  if (cache.size < MAX_CACHED) cache.set(sql, text);
  return text;
}

function forPostgres(sql: string, schema: string): string {
  return sql
    .replace(POSTGRES_OBJECT, `"${schema}".$1`)
    .replaceAll(`'${NOTIFY_CHANNEL}'`, `'${NOTIFY_CHANNEL}:${schema}'`)
    .replace(ADVISORY_NAMESPACE, String(advisoryNamespace(schema)))
    .replace(APP_ID_KEY, `hashtextextended($1, hashtextextended('${schema}', 1819240297))`);
}

function forMysql(sql: string, prefix: string): string {
  return sql
    .replace(MYSQL_OBJECT, `${prefix}$1`)
    .replace(MYSQL_CONSTRAINT, `CONSTRAINT ${prefix}$1`)
    .replace(MYSQL_APP_ID_KEY, `CONCAT(DATABASE(), CHAR(0), '${prefix}', CHAR(0), ?)`);
}

/**
 * The first key of the transaction advisory locks of the schema's `locking_try_acquire` (FNV-1a of its name, a
 * signed 32-bit integer): two schemas serialise their own names only.
 */
function advisoryNamespace(schema: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(`nestjs-db-locks:${schema}`, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193);
  const key = hash | 0;
  return key === 1_819_239_275 ? key ^ 1 : key;
}
