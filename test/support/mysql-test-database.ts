import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import type { TestDatabase } from './test-database.js';

/** The suite's MySQL/MariaDB server (`MYSQL_URL`, or the private one of the global setup); undefined when none. */
export function mysqlAdminUrl(): string | undefined {
  return process.env.NDL_TEST_MYSQL_URL || undefined;
}

/** `describe` when the suite has a MySQL/MariaDB server, else `describe.skip` (the global setup said why). */
export const describeOnMysql: jest.Describe = mysqlAdminUrl() ? describe : describe.skip;

/**
 * `$1`, `$2`, … as `?` with the values in the order the placeholders appear, so that the harnesses' PostgreSQL
 * statements run unchanged where their SQL is standard.
 */
export function positional(text: string, values: readonly unknown[] = []): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const sql = text.replace(/\$(\d+)(::[a-z]+)?/g, (_, index: string) => {
    params.push(values[Number(index) - 1]);
    return '?';
  });
  return { sql, params };
}

async function onServer<T>(url: string, fn: (connection: mysql.Connection) => Promise<T>): Promise<T> {
  const connection = await mysql.createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true });
  try {
    return await fn(connection);
  } finally {
    await connection.end();
  }
}

/**
 * Creates an empty MySQL/MariaDB database; with `migrate` (the default) runs the shipped migrations in it. On the
 * suite's server, or on the server of `adminUrl` (a node of the Galera specs' cluster).
 */
export async function createMysqlTestDatabase(options: { migrate?: boolean; adminUrl?: string } = {}): Promise<TestDatabase> {
  const admin = options.adminUrl ?? mysqlAdminUrl();
  if (!admin) throw new Error('no MySQL/MariaDB server: set MYSQL_URL or install mariadb-server');
  const name = `ndl_test_${randomBytes(6).toString('hex')}`;
  // The server's default character set and collation, as a user's database has them: the lock tables set their own.
  await onServer(admin, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const database: TestDatabase = {
    url: url.toString(),
    async query(text, values) {
      const { sql, params } = positional(text, values);
      return onServer(url.toString(), async (c) => (await c.query(sql, params))[0] as never);
    },
    refuseConnections: () => Promise.reject(new Error('refuseConnections: not available on MySQL/MariaDB')),
    drop: () => onServer(admin, (c) => c.query(`DROP DATABASE IF EXISTS ${name}`)).then(() => undefined),
  };
  if (options.migrate ?? true) {
    const dataSource = new DataSource({ type: 'mariadb', url: database.url, migrations: [...LOCK_MIGRATIONS] });
    await dataSource.initialize();
    await dataSource.runMigrations();
    await dataSource.destroy();
  }
  return database;
}
