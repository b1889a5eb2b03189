import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { makeReachableByPostgresUser, startEmbeddedPostgres } from './embedded-postgres.js';
import { type SampleDialect, sampleDatabaseTarget } from './sample-dialect.js';

/** The database the sample application runs on, and how to let go of it. */
export interface SampleDatabase {
  /** Connection URL handed to TypeORM (and to the cluster's children); its scheme picks the dialect. */
  readonly url: string;
  /** PostgreSQL, or MySQL / MariaDB (a `mysql://` or `mariadb://` `DATABASE_URL`). */
  readonly dialect: SampleDialect;
  /** Where it comes from, for the start-up banner. */
  readonly source: string;
  /** Anything done to the file system to make it work, for the start-up banner. */
  readonly notes: readonly string[];
  /** Whether this process started the server (and `stop` stops it). */
  readonly started: boolean;
  /** Stops the embedded server when this process started it; a no-op otherwise. */
  stop(): Promise<void>;
}

/** Where `npm start` keeps its embedded cluster: git-ignored, reused across runs. */
export const DEFAULT_DATA_DIR = resolve(process.cwd(), '.data', 'sample-pg');

const USER_AND_PASSWORD = 'postgres:postgres';

/**
 * The sample's database: `DATABASE_URL` when set (`postgres://`, or `mysql://` / `mariadb://` for MySQL or MariaDB),
 * otherwise embedded PostgreSQL with its data in `dataDir`. @throws Error for a URL of any other scheme.
 * A server left running by a previous run that was killed (`kill -9` leaves PostgreSQL up) is reused, not fought.
 */
export async function openSampleDatabase(
  env: NodeJS.ProcessEnv,
  dataDir: string = env.SAMPLE_DATA_DIR ? resolve(env.SAMPLE_DATA_DIR) : DEFAULT_DATA_DIR,
): Promise<SampleDatabase> {
  if (env.DATABASE_URL) {
    const { dialect, where } = sampleDatabaseTarget(env.DATABASE_URL);
    return {
      url: env.DATABASE_URL,
      dialect,
      source: `DATABASE_URL (${where})`,
      notes: [],
      started: false,
      stop: async () => undefined,
    };
  }
  const notes = makeReachableByPostgresUser(dirname(dataDir)).map(
    (dir) => `added o+x (search only) to ${dir} for the postgres user`,
  );
  const orphan = runningServerPort(dataDir);
  if (orphan !== undefined) {
    return {
      url: `postgres://${USER_AND_PASSWORD}@127.0.0.1:${orphan}/postgres`,
      dialect: 'postgres',
      source: `embedded PostgreSQL left running by an earlier run (${dataDir}, port ${orphan})`,
      notes,
      started: false,
      stop: async () => undefined,
    };
  }
  const server = await startEmbeddedPostgres({ dataDir, persistent: true });
  return {
    url: server.url,
    dialect: 'postgres',
    source: `embedded PostgreSQL (${dataDir})`,
    notes,
    started: true,
    stop: server.stop,
  };
}

/**
 * The port of a PostgreSQL server that is still running on `dataDir`, from its `postmaster.pid` (line 1: pid,
 * line 4: port), or `undefined` when there is none (a stale file is left to `startEmbeddedPostgres`).
 */
function runningServerPort(dataDir: string): number | undefined {
  const pidFile = resolve(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isSafeInteger(pid) || pid <= 0 || !Number.isSafeInteger(port) || port <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined;
  }
}
