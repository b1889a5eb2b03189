import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { freePort, startEmbeddedPostgres } from '../../sample-app/src/database/embedded-postgres.js';
import { mariadbInstalled, startPrivateMariadb } from './mariadb-server.mjs';
import { connectClient } from './test-database.js';

/**
 * A database server of one test file, which the test may stop and start again (even when the suite runs on
 * `DATABASE_URL` or `MYSQL_URL`: those cannot be stopped by a test), with the lock tables migrated.
 */
export interface RestartableServer {
  /** URL of the database where the lock tables are migrated. */
  readonly url: string;
  /** Stops the server (every session is ended). */
  stop(): Promise<void>;
  /**
   * Stops the server at once, as a crash does (PostgreSQL: the immediate shutdown, SIGQUIT to the postmaster, no
   * checkpoint; MariaDB: SIGKILL), and resolves once it is gone. `start()` then recovers from its log.
   */
  crash(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it for good and deletes its data. */
  destroy(): Promise<void>;
  /** The rows of `text`, or undefined while the server does not answer. */
  tryQuery<R>(text: string): Promise<R[] | undefined>;
  /** How many of `appIds` have their instance lock held by a session of the server (0 while it does not answer). */
  appIdsHeld(appIds: readonly string[]): Promise<number>;
  /** Whether the grant `stamp`'s lease end lies at least `leaseMs` after the server last started (it was renewed since). */
  renewedSinceStart(stamp: number, leaseMs: number): Promise<boolean | undefined>;
}

async function migrate(type: 'postgres' | 'mariadb', url: string): Promise<void> {
  const dataSource = new DataSource({ type, url, migrations: [...LOCK_MIGRATIONS] });
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();
}

/** Runs `fn`, or answers undefined when it throws (the server is away). */
async function orUndefined<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch {
    return undefined;
  }
}

/** Sends `signal` to the process whose id is the first line of `pidFile`, and resolves once that process is gone. */
async function killByPidFile(pidFile: string, signal: NodeJS.Signals): Promise<void> {
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  process.kill(pid, signal);
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts an embedded PostgreSQL server of its own and runs the lock migrations in its `postgres` database. */
export async function startRestartablePostgres(): Promise<RestartableServer> {
  const parent = mkdtempSync(join(tmpdir(), 'ndl-faults-'));
  const options = { dataDir: join(parent, 'pg'), port: await freePort(), persistent: true };
  let server: { url: string; stop(): Promise<void> } | undefined = await startEmbeddedPostgres(options);
  const url = server.url;
  await migrate('postgres', url);
  const tryQuery = <R>(text: string) =>
    orUndefined(async () => {
      const client = await connectClient(url);
      try {
        return (await client.query(text)).rows as R[];
      } finally {
        await client.end();
      }
    });
  return {
    url,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async crash() {
      await killByPidFile(join(options.dataDir, 'postmaster.pid'), 'SIGQUIT');
      server = undefined; // its process is gone: start() starts another
    },
    async start() {
      server ??= await startEmbeddedPostgres(options);
    },
    async destroy() {
      await server?.stop();
      server = undefined;
      rmSync(parent, { recursive: true, force: true });
    },
    tryQuery,
    async appIdsHeld(appIds) {
      // An instance names its session `nestjs-db-locks <app id> <instance>` once it holds its app id.
      const held = await tryQuery<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${appIds.map((id) => `application_name LIKE 'nestjs-db-locks ${id} %'`).join(' OR ')}`,
      );
      return held?.[0]?.n ?? 0;
    },
    async renewedSinceStart(stamp, leaseMs) {
      const rows = await tryQuery<{ renewed: boolean }>(
        `SELECT lease_expires >= pg_postmaster_start_time() + ${leaseMs} * interval '1 millisecond' AS renewed
           FROM locking_log WHERE stamp = ${stamp}`,
      );
      return rows?.[0]?.renewed;
    },
  };
}

/** Whether this machine can start a private MariaDB server (`mariadb-server` installed). */
export const canStartMariadb: () => boolean = mariadbInstalled;

/** Starts a private MariaDB server of its own and runs the lock migrations in its `locks` database. */
export async function startRestartableMariadb(options: readonly string[] = []): Promise<RestartableServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ndl-mariadb-restart-'));
  const server = await startPrivateMariadb(dir, options);
  const admin = await mysql.createConnection({ uri: server.url });
  await admin.query('CREATE DATABASE locks');
  await admin.end();
  const url = server.url.replace(/\/mysql$/, '/locks');
  await migrate('mariadb', url);
  const tryQuery = <R>(text: string) =>
    orUndefined(async () => {
      const connection = await mysql.createConnection({ uri: url, connectTimeout: 1000 });
      try {
        return (await connection.query(text))[0] as R[];
      } finally {
        await connection.end();
      }
    });
  return {
    url,
    stop: () => server.stop(),
    async crash() {
      await killByPidFile(join(dir, 'mariadb.pid'), 'SIGKILL');
      await server.stop(); // forgets the exited process
    },
    start: () => server.start(),
    async destroy() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
    tryQuery,
    async appIdsHeld(appIds) {
      // The instance lock is GET_LOCK on this name (lib/store/mysql/mysql-lock.queries.sql.ts).
      const held = await tryQuery<{ n: string }>(
        `SELECT ${appIds.map((id) => `(IS_USED_LOCK(CONCAT('nestjs-db-locks:', LEFT(SHA2(CONCAT(DATABASE(), CHAR(0), '${id}'), 256), 48))) IS NOT NULL)`).join(' + ')} AS n`,
      );
      return Number(held?.[0]?.n ?? 0);
    },
    async renewedSinceStart(stamp, leaseMs) {
      const rows = await tryQuery<{ renewed: number }>(
        `SELECT lease_expires >= UTC_TIMESTAMP(6) - INTERVAL (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
           WHERE VARIABLE_NAME = 'UPTIME') SECOND + INTERVAL ${leaseMs * 1000} MICROSECOND AS renewed
           FROM locking_log WHERE stamp = ${stamp}`,
      );
      return rows?.[0] === undefined ? undefined : Number(rows[0].renewed) === 1;
    },
  };
}

/**
 * Registers the enclosing describe block's hooks: a server of `start` (e.g. `dialect.startRestartable`) started before
 * its tests, and after them started again (a test may have left it stopped) and destroyed. The returned function reads
 * it (from the first hook or test on).
 */
export function useRestartableServer(start: () => Promise<RestartableServer>): () => RestartableServer {
  let server: RestartableServer | undefined;
  beforeAll(async () => {
    server = await start();
  }, 120_000);
  afterAll(async () => {
    await server?.start();
    await server?.destroy();
  });
  return () => {
    if (!server) throw new Error('useRestartableServer: read before the beforeAll hook ran');
    return server;
  };
}
