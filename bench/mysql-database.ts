import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import type mysql from 'mysql2/promise';
import { DataSource } from 'typeorm';
// The tests' private MariaDB (plain JavaScript, shared with their global setup and the pack smoke test).
import { mariadbInstalled, startPrivateMariadb } from '../test/support/mariadb-server.mjs';
import { onMysql } from './contenders/mysql-clients.js';
import { type BenchServer, createBenchDatabase, type DatabaseStatements } from './bench-server.js';
import type { SliceHygiene } from './rounds.js';

/** The MariaDB/MySQL database of the benchmark: fresh, migrated, dropped (and its server stopped, when private). */
export interface MysqlBenchDatabase extends SliceHygiene {
  readonly url: string;
  /** Its name, also the prefix of the `GET_LOCK` names (they are server-wide). */
  readonly name: string;
  /** `MYSQL_URL (host:port)` or `private MariaDB …`. */
  readonly source: string;
  /** Rows of one statement, on a short-lived connection. */
  query<R>(sql: string, values?: unknown[]): Promise<R[]>;
  dispose(): Promise<void>;
}

/** The floor's table: one row in, the same row out (InnoDB, like the lock tables). */
const CREATE_FLOOR = `CREATE TABLE bench_floor (
  id      BIGINT       NOT NULL PRIMARY KEY,
  app_id  VARCHAR(200) NOT NULL,
  created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE = InnoDB`;

/** Purge is done when the history list is this short (other clients of a shared server keep it above 0). */
const PURGED_HISTORY = 100;
/** Longest wait for the purge before a slice. */
const PURGE_WAIT_MS = 2000;


/** `MYSQL_URL` when set, else a private MariaDB when installed, else the reason why there is none. */
async function startServer(): Promise<BenchServer | string> {
  const external = process.env.MYSQL_URL;
  if (external) {
    const { hostname, port } = new URL(external);
    return { adminUrl: external, source: `MYSQL_URL (${hostname}:${port || 3306})`, stop: async () => undefined };
  }
  if (!mariadbInstalled()) {
    return 'no MYSQL_URL and no mariadb-server installed (set MYSQL_URL, or apt-get install mariadb-server)';
  }
  const parent = mkdtempSync(join(tmpdir(), 'ndl-bench-mariadb-'));
  try {
    const server = await startPrivateMariadb(parent);
    return {
      adminUrl: server.url,
      source: 'private MariaDB (mariadbd started by the bench, data directory in the temporary folder)',
      stop: async () => {
        // The server process and stop()'s own timeout are unref'd (made for Jest, which keeps running): without a
        // ref'd timer, Node.js would find nothing left to wait for and exit in the middle of the shutdown.
        const keepAlive = setInterval(() => undefined, 1000);
        try {
          await server.stop();
        } finally {
          clearInterval(keepAlive);
        }
        rmSync(parent, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(parent, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Reaches or starts the server, creates `ndl_bench_<random>`, runs the library's migrations and creates the floor's
 * table; resolves to the reason instead when there is no server to use.
 */
export async function openMysqlBenchDatabase(): Promise<MysqlBenchDatabase | string> {
  const server = await startServer();
  if (typeof server === 'string') return server;
  return createBenchDatabase(server, MYSQL_DATABASES, async (url, name, dispose) => {
    const query = <R>(sql: string, values: unknown[] = []): Promise<R[]> =>
      onMysql(url, async (c) => (await c.query<mysql.RowDataPacket[]>(sql, values))[0] as R[]);
    const database: MysqlBenchDatabase = {
      url,
      name,
      source: server.source,
      query,
      // InnoDB's VACUUM is its purge thread: wait (a bounded time) until it caught up with the previous slice.
      vacuum: async () => {
        const deadline = Date.now() + PURGE_WAIT_MS;
        while (Date.now() < deadline && (await historyLength(query)) > PURGED_HISTORY) await sleep(50);
      },
      // No CHECKPOINT statement: InnoDB's page cleaner flushes in the background (forcing it takes a global setting).
      checkpoint: async () => true,
      dispose,
    };
    await migrate(url);
    await query(CREATE_FLOOR);
    return database;
  });
}

/** Databases on MySQL/MariaDB. */
const MYSQL_DATABASES: DatabaseStatements = {
  create: (adminUrl, name) => onMysql(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`)).then(() => undefined),
  drop: (adminUrl, name) => onMysql(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name}`)).then(() => undefined),
};

async function historyLength(query: MysqlBenchDatabase['query']): Promise<number> {
  const [row] = await query<{ Value: string }>("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'");
  return Number(row?.Value ?? 0);
}

async function migrate(url: string): Promise<void> {
  const dataSource = new DataSource({ type: 'mariadb', url, migrations: [...LOCK_MIGRATIONS] });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
}
