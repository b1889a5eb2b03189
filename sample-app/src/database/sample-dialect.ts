import type { DataSource, DataSourceOptions } from 'typeorm';

/** The databases the sample runs on: PostgreSQL, or MySQL / MariaDB (one dialect, as for the lock library). */
export type SampleDialect = 'postgres' | 'mysql';

/** A `DATABASE_URL` understood: which dialect its scheme picks, and where it points (without the password). */
export interface SampleDatabaseTarget {
  /** `postgres`, or `mysql` for MySQL and MariaDB alike. */
  readonly dialect: SampleDialect;
  /** The TypeORM DataSource type: `postgres`, or `mysql` / `mariadb` as the URL's scheme says. */
  readonly type: 'postgres' | 'mysql' | 'mariadb';
  /** `scheme://host:port/database`, without the user and password. */
  readonly where: string;
}

/** The URL schemes the sample accepts (the library's command line accepts the same). */
const SCHEMES: Record<string, { readonly type: SampleDatabaseTarget['type']; readonly port: number }> = {
  'postgres:': { type: 'postgres', port: 5432 },
  'postgresql:': { type: 'postgres', port: 5432 },
  'mysql:': { type: 'mysql', port: 3306 },
  'mariadb:': { type: 'mariadb', port: 3306 },
};

/**
 * What `url` points at: `postgres://` and `postgresql://` reach PostgreSQL, `mysql://` and `mariadb://` MySQL or
 * MariaDB. @throws Error for any other scheme, before any connection.
 */
export function sampleDatabaseTarget(url: string): SampleDatabaseTarget {
  const parsed = new URL(url);
  const scheme = SCHEMES[parsed.protocol];
  if (!scheme) {
    throw new Error(
      `DATABASE_URL must start with postgres://, postgresql://, mysql:// or mariadb:// (got ${parsed.protocol}//)`,
    );
  }
  return {
    dialect: scheme.type === 'postgres' ? 'postgres' : 'mysql',
    type: scheme.type,
    where: `${parsed.protocol}//${parsed.hostname}:${parsed.port || scheme.port}${parsed.pathname}`,
  };
}

/**
 * The sample's TypeORM DataSource on `url`, in the dialect its scheme picks (the caller adds entities and
 * migrations). On MySQL / MariaDB the driver reads and writes times as UTC (`timezone: 'Z'`), as the lock tables
 * need; on PostgreSQL the connections carry the instance's name in `pg_stat_activity`.
 */
export function sampleDataSourceOptions(url: string, appId: string): DataSourceOptions {
  const { type } = sampleDatabaseTarget(url);
  if (type === 'postgres') {
    return { type, url, poolSize: 10, extra: { application_name: `nestjs-db-locks-sample:${appId}` } };
  }
  return { type, url, poolSize: 10, timezone: 'Z' };
}

/** The dialect of a running DataSource (the migration and the services pick their SQL by it). */
export function sampleDialectOf(dataSource: Pick<DataSource, 'options'>): SampleDialect {
  return dataSource.options.type === 'postgres' ? 'postgres' : 'mysql';
}

/**
 * The statements that differ between the dialects at run time (the sample's migration holds each dialect's tables).
 * Everything else the services run goes through TypeORM's repositories and query builder, which write each
 * dialect's SQL themselves.
 */
export const SAMPLE_SQL: Record<SampleDialect, { readonly now: string; readonly version: string }> = {
  postgres: {
    /** The clock now, not the transaction's start (`now()` is the latter). */
    now: 'SELECT clock_timestamp() AS now',
    version: `SELECT 'PostgreSQL ' || split_part(current_setting('server_version'), ' ', 1) AS version`,
  },
  mysql: {
    /** The statement's start, in UTC: the driver reads it as UTC (`timezone: 'Z'`), whatever the server's zone. */
    now: 'SELECT UTC_TIMESTAMP(6) AS now',
    version: 'SELECT VERSION() AS version',
  },
};

/** The database server in words, e.g. `PostgreSQL 15.8`, `MariaDB 10.11.6`, `MySQL 8.0.36`. */
export async function sampleServerName(dataSource: DataSource): Promise<string> {
  const rows: Array<{ version: string }> = await dataSource.query(SAMPLE_SQL[sampleDialectOf(dataSource)].version);
  return serverNameOf(String(rows[0]?.version ?? 'unknown'));
}

/** `10.11.6-MariaDB-0+deb12u1` → `MariaDB 10.11.6`; `8.0.36` → `MySQL 8.0.36`; PostgreSQL's text as it is. */
export function serverNameOf(version: string): string {
  if (version.startsWith('PostgreSQL')) return version;
  const number = version.split('-')[0] ?? version;
  return /mariadb/i.test(version) ? `MariaDB ${number}` : `MySQL ${number}`;
}
