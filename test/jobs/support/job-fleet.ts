import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type HolderProcess, startHolder } from '../../support/holder-process.js';
import type { TestDialect } from '../../support/dialects.js';
import type { TestDatabase } from '../../support/test-database.js';

const SCRIPT = fileURLToPath(new URL('./job-replica.child.mjs', import.meta.url));

/** Debian's libfaketime (package `faketime`): shifts a process's wall clock, not its monotonic one. */
export const LIBFAKETIME = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1'].find(
  (path) => existsSync(path),
);

/**
 * `describe`, or `describe.skip` when libfaketime is not installed (an error under `REQUIRE_FAKETIME=1`, as in CI:
 * `apt-get install faketime`).
 */
export function describeWithFaketime(dialect: TestDialect): jest.Describe {
  if (LIBFAKETIME) return dialect.describe;
  if (process.env.REQUIRE_FAKETIME === '1') throw new Error('REQUIRE_FAKETIME=1 but libfaketime is missing: apt-get install faketime');
  return describe.skip;
}

/** One replica of the fleet: a child process whose clock is `skewSeconds` off the machine's. */
export interface Replica extends HolderProcess {
  readonly appId: string;
}

/** Starts a replica (test/jobs/support/job-replica.child.mjs) and waits until it is ready. */
export async function startReplica(url: string, appId: string, skewSeconds: number, env: Record<string, string>): Promise<Replica> {
  const clock: Record<string, string> =
    skewSeconds === 0
      ? {}
      : {
          LD_PRELOAD: LIBFAKETIME!,
          FAKETIME: `${skewSeconds > 0 ? '+' : ''}${skewSeconds}`,
          // Timers run on the monotonic clock: shifting it too would not move the ticks.
          FAKETIME_DONT_FAKE_MONOTONIC: '1',
        };
  const replica = startHolder({ DATABASE_URL: url, APP_ID: appId, ...clock, ...env }, SCRIPT);
  await replica.next('ready');
  return Object.assign(replica, { appId });
}

/** Creates `job_hits`, where every run of the replicas' jobs records itself. */
export async function createHitsTable(db: TestDatabase, dialect: TestDialect): Promise<void> {
  await db.query(
    dialect.name === 'MariaDB'
      ? 'CREATE TABLE job_hits (id bigint AUTO_INCREMENT PRIMARY KEY, job varchar(100) NOT NULL, app_id varchar(100) NOT NULL, phase varchar(10) NOT NULL, local_ms bigint NOT NULL, db_ms bigint NOT NULL)'
      : 'CREATE TABLE job_hits (id bigserial PRIMARY KEY, job varchar(100) NOT NULL, app_id varchar(100) NOT NULL, phase varchar(10) NOT NULL, local_ms bigint NOT NULL, db_ms bigint NOT NULL)',
  );
}

/** A run of a job as `job_hits` records it. */
export interface Hit {
  readonly job: string;
  readonly appId: string;
  readonly phase: 'start' | 'end';
  readonly localMs: number;
  readonly dbMs: number;
}

/** The hits of `job` (every phase), in database-time order. */
export async function hitsOf(db: TestDatabase, job: string): Promise<Hit[]> {
  const rows = await db.query<{ job: string; app_id: string; phase: 'start' | 'end'; local_ms: string; db_ms: string }>(
    'SELECT job, app_id, phase, local_ms, db_ms FROM job_hits WHERE job = $1 ORDER BY db_ms, id',
    [job],
  );
  return rows.map((row) => ({ job: row.job, appId: row.app_id, phase: row.phase, localMs: Number(row.local_ms), dbMs: Number(row.db_ms) }));
}

/** The most runs going at once, from their start and end hits (database clock). */
export function mostAtOnce(hits: readonly Hit[]): number {
  let running = 0;
  let most = 0;
  for (const hit of hits) {
    running += hit.phase === 'start' ? 1 : -1;
    most = Math.max(most, running);
  }
  return most;
}

/** The database's clock, in epoch ms. */
export async function dbNowMs(db: TestDatabase, dialect: TestDialect): Promise<number> {
  const [row] = await db.query<{ ms: string }>(
    dialect.name === 'MariaDB'
      ? "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000 AS ms"
      : 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms',
  );
  return Number(row!.ms);
}

/** Stops replicas politely (SIGTERM: `app.close()`), or at once when they do not stop within 10 s. */
export async function stopReplicas(replicas: readonly Replica[]): Promise<void> {
  await Promise.all(
    replicas.map(async (replica) => {
      if (replica.child.exitCode !== null || replica.child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => replica.child.once('exit', () => resolve()));
      replica.child.kill('SIGTERM');
      const timer = setTimeout(() => replica.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}
