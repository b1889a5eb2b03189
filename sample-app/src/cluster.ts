import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CLUSTER_ENV } from './banner.js';
import { openSampleDatabase } from './database/sample-database.js';
import { runSampleMigrations } from './database/sample.migrations.js';

/**
 * `npm run start:cluster`: starts embedded PostgreSQL once (or uses `DATABASE_URL`: `postgres://`, `mysql://` or
 * `mariadb://`, handed to every instance as it is), runs the migrations once, then runs three instances of the sample
 * on it (`sample-1` … `sample-3` on ports 3000–3002, `BASE_PORT` to move them), each its own process with its own
 * `APP_ID`. An instance that dies is restarted after `RESTART_DELAY_MS` (default 20 s): long enough to watch its
 * locks stay held, then come back — by lease expiry and the reaper of a surviving instance (log: REAPED), or at its
 * restart (log: RECOVERED).
 */
const INSTANCES = 3;
const basePort = Number(process.env.BASE_PORT || 3000);
const restartDelayMs = Number(process.env.RESTART_DELAY_MS || 20_000);
const mainScript = fileURLToPath(new URL('./main.js', import.meta.url));

function say(line: string): void {
  process.stdout.write(`[cluster] ${line}\n`);
}

async function runCluster(): Promise<void> {
  const database = await openSampleDatabase(process.env);
  for (const note of database.notes) say(note);
  const ran = await runSampleMigrations(database.url);
  say(`database: ${database.source}${ran.length > 0 ? ` (migrated: ${ran.join(', ')})` : ''}`);

  const children = new Map<number, ChildProcess>();
  let stopping = false;

  const start = (index: number): void => {
    const appId = `sample-${index + 1}`;
    const port = basePort + index;
    const child = spawn(process.execPath, [mainScript], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        APP_ID: appId,
        PORT: String(port),
        [CLUSTER_ENV.pid]: String(process.pid),
        [CLUSTER_ENV.instances]: String(INSTANCES),
        [CLUSTER_ENV.database]: database.source,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.set(index, child);
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => process.stdout.write(`[${appId}] ${line}\n`));
    }
    say(`${appId}: starting, pid ${child.pid}, console http://127.0.0.1:${port}/`);
    child.on('exit', (code, signal) => {
      children.delete(index);
      if (stopping) return;
      say(
        `${appId} (pid ${child.pid}) died (${signal ?? `exit ${code}`}). Its locks stay held until their lease ` +
          `expires and a surviving instance's reaper frees them (REAPED in the log), or until it restarts in ` +
          `${restartDelayMs / 1000} s and frees them itself (RECOVERED).`,
      );
      setTimeout(() => {
        if (!stopping) start(index);
      }, restartDelayMs);
    });
  };

  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: stopping the instances${database.started ? ', then PostgreSQL' : ''}`);
    const exits = [...children.values()].map((child) => new Promise((resolve) => child.once('exit', resolve)));
    for (const child of children.values()) child.kill('SIGTERM');
    await Promise.all(exits);
    await database.stop();
    process.exit(0);
  };
  process.once('SIGINT', (signal) => void stop(signal));
  process.once('SIGTERM', (signal) => void stop(signal));

  say(
    `pid ${process.pid}: ${INSTANCES} instances on one database; Ctrl+C (or kill ${process.pid}) stops them all` +
      `${database.started ? ', then PostgreSQL' : ''}`,
  );
  for (let index = 0; index < INSTANCES; index++) start(index);
}

runCluster().catch((error: unknown) => {
  process.stderr.write(
    `The cluster did not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
