import { LockConfigurationError } from '../errors/index.js';
import type { LockDialect } from '../store/lock-dialect.util.js';

/** A checked `url` option: the dialect its scheme names, and the URL the driver takes. @internal */
export interface LockDatabaseUrl {
  readonly dialect: LockDialect;
  /** The URL as given, `mariadb://` spelled `mysql://` (the only scheme mysql2 knows). */
  readonly driverUrl: string;
}

/** The schemes `url` accepts, and the dialect of each. */
const URL_SCHEMES: Readonly<Record<string, LockDialect>> = {
  'postgres:': 'postgres',
  'postgresql:': 'postgres',
  'mysql:': 'mysql',
  'mariadb:': 'mysql',
};

/**
 * The dialect and driver URL of the `url` option: `postgres://` / `postgresql://` for PostgreSQL, `mysql://` /
 * `mariadb://` for MySQL and MariaDB.
 * @throws LockConfigurationError for anything else, naming the option and (without its password) the value.
 * @internal
 */
export function parseLockDatabaseUrl(value: unknown): LockDatabaseUrl {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  const dialect = url ? URL_SCHEMES[url.protocol] : undefined;
  if (!dialect) {
    throw new LockConfigurationError(
      'LockModule option url must be a connection string starting with postgres://, postgresql://, mysql:// or ' +
        `mariadb://, e.g. 'postgres://user:password@db-host:5432/app' (got ${redactedUrl(value)})`,
    );
  }
  const text = value as string;
  return { dialect, driverUrl: dialect === 'mysql' ? text.replace(/^mariadb:/, 'mysql:') : text };
}

/** A rejected option value for an error message, without the password a connection string may carry. @internal */
export function redactedUrl(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.replace(/\/\/([^:@/]*):[^@]*@/, '//$1:***@')) : String(value);
}
