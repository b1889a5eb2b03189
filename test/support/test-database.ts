import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';

/** A database of its own for one test file, on the suite's server. */
export interface TestDatabase {
  readonly url: string;
  /** Runs SQL on a short-lived connection of its own. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /**
   * Makes the database refuse every new connection and ends the open ones (as a restart or a failover does to its
   * clients), or lets connections in again. Other databases of the server are not touched.
   */
  refuseConnections(refuse: boolean): Promise<void>;
  drop(): Promise<void>;
}

function adminUrl(): string {
  const url = process.env.NDL_TEST_ADMIN_URL;
  if (!url) throw new Error('NDL_TEST_ADMIN_URL is not set: run the tests through `npm test`');
  return url;
}

/**
 * A connected raw client of a test. Its `error` listener keeps a connection that the server ends (a dropped database,
 * a terminated backend) from becoming an uncaught exception that fails whichever test file is running: the failure
 * reaches the test through the rejected query instead.
 */
export async function connectClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

async function onAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectClient(adminUrl());
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates an empty database; with `migrate` (the default) runs the shipped migrations in it through TypeORM. */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const name = `ndl_test_${randomBytes(6).toString('hex')}`;
  await onAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  const database: TestDatabase = {
    url: url.toString(),
    async query(text, values) {
      const client = await connectClient(url.toString());
      try {
        return (await client.query(text, values)).rows;
      } finally {
        await client.end();
      }
    },
    refuseConnections: (refuse) =>
      onAdmin(async (client) => {
        await client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS ${refuse ? 'false' : 'true'}`);
        if (refuse) {
          // pg_terminate_backend only signals: wait until every backend has gone (each has sent its client the
          // termination by then), so that a test's next step meets the outage and not the instant before it.
          await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
          for (;;) {
            const { rows } = await client.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
            if (rows[0].n === 0) break;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
      }),
    drop: () => onAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
  if (options.migrate ?? true) {
    const dataSource = new DataSource({ type: 'postgres', url: database.url, migrations: [...LOCK_MIGRATIONS] });
    await dataSource.initialize();
    await dataSource.runMigrations();
    await dataSource.destroy();
  }
  return database;
}
