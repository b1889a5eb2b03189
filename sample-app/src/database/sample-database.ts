import { fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeReachableByPostgresUser } from './postgres-user-access.js';
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
  /**
   * Stops the embedded server when this process started it (call it last, after `app.close()`); a no-op otherwise.
   */
  stop(): Promise<void>;
}

/** Where `npm start` keeps its embedded cluster: git-ignored, reused across runs. */
export const DEFAULT_DATA_DIR = resolve(process.cwd(), '.data', 'sample-pg');

const USER_AND_PASSWORD = 'postgres:postgres';

/**
 * The sample's database: `DATABASE_URL` when set (`postgres://`, or `mysql://` / `mariadb://` for MySQL or MariaDB),
 * otherwise embedded PostgreSQL with its data in `dataDir`. @throws Error for a URL of any other scheme.
 * A server left running by a previous run is reused, not fought.
 *
 * Embedded PostgreSQL runs under a keeper process in a process group of its own (`embedded-postgres.keeper.js`): the
 * terminal's Ctrl+C reaches this process only, which drains its calls in flight on a database that is still up, then
 * stops the server with `stop()`. `embedded-postgres` is loaded by the keeper only (on MySQL/MariaDB or a
 * `DATABASE_URL`, never at all): it takes over SIGINT in the process that loads it.
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
  const server = await startKeptPostgres(dataDir);
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

/** The keeper of embedded PostgreSQL: plain JavaScript beside this file, in the sources and in the build alike. */
const KEEPER = fileURLToPath(new URL('./embedded-postgres.keeper.js', import.meta.url));

/**
 * Starts embedded PostgreSQL on `dataDir` under a keeper process in a process group of its own, and resolves with its
 * URL and a `stop` that stops the server and awaits the keeper's exit. The keeper stops the server by itself if this
 * process goes away without calling `stop` (killed).
 */
function startKeptPostgres(dataDir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const keeper = fork(KEEPER, [dataDir], { detached: true, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  keeper.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((done) => keeper.once('exit', () => done()));
  const stop = async (): Promise<void> => {
    if (keeper.exitCode === null && keeper.signalCode === null && keeper.connected) keeper.send('stop');
    await exited;
  };
  return new Promise((resolveStart, rejectStart) => {
    keeper.once('message', (message: { url?: string; error?: string }) => {
      if (message.url) resolveStart({ url: message.url, stop });
      else rejectStart(new Error(message.error ?? 'embedded PostgreSQL did not start'));
    });
    keeper.once('exit', (code, signal) => {
      const how = signal ?? `exit ${code}`;
      rejectStart(new Error(`embedded PostgreSQL's keeper ended (${how}) before the server started\n${stderr}`));
    });
  });
}
