import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { startEmbeddedPostgres } from '../../sample-app/src/database/embedded-postgres.js';

/** An embedded PostgreSQL server of one test file, which the test may stop and start again. */
export interface RestartablePostgres {
  /** URL of its `postgres` database, where the lock tables are migrated. */
  readonly url: string;
  /** Stops the server (a fast shutdown: every session is ended). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it for good and deletes its data. */
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Starts a server of its own (even when the suite runs on `DATABASE_URL`: that one cannot be stopped by a test) and
 * runs the lock migrations in it.
 */
export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const parent = mkdtempSync(join(tmpdir(), 'ndl-faults-'));
  const options = { dataDir: join(parent, 'pg'), port: await freePort(), persistent: true };
  let server: { url: string; stop(): Promise<void> } | undefined = await startEmbeddedPostgres(options);
  const url = server.url;
  const dataSource = new DataSource({ type: 'postgres', url, migrations: [...LOCK_MIGRATIONS] });
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();
  return {
    url,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      server ??= await startEmbeddedPostgres(options);
    },
    async destroy() {
      await server?.stop();
      server = undefined;
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
