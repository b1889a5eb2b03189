import mysql from 'mysql2/promise';
import { setTimeout as sleep } from 'node:timers/promises';
import { namesOf } from './dialects.js';
import { startResetProxy } from './reset-proxy.js';
import type { RestartableServer } from './restartable-server.js';
import { judgeSoak, type SoakDatabaseState, type SoakFaultMoment, type SoakVerdict } from './soak-judge.js';
import { type Moment, startSoakWorkers } from './soak-workers.js';
import { connectClient } from './test-database.js';

/** The faults of the soak, drawn at random one after the other. */
export const SOAK_FAULTS = ['kill', 'pause', 'fast-restart', 'immediate-restart', 'freeze', 'terminate'] as const;
export type SoakFault = (typeof SOAK_FAULTS)[number];

/** The settings of a soak run. */
export interface SoakOptions {
  /** The seed of the fault schedule (which fault, which worker, how long, when). */
  readonly seed: number;
  /** How long faults are made; then a quiet period, and the workers stop. */
  readonly budgetMs: number;
  readonly workers: number;
  readonly names: readonly string[];
  readonly leaseMs: number;
  readonly renewMs: number;
  readonly reaperMs: number;
  /** Concurrent callers in each worker process (1 by default). */
  readonly callers?: number;
  /** The `waitMs` of each tryLocks call (1500 by default). */
  readonly waitMs?: number;
  /** LockModule's `waitRecheckMs` in the workers (500 by default). */
  readonly waitRecheckMs?: number;
  /** How long a holder holds: `min` + up to `spread` ms (20 + up to 200 by default), a fenced write in most holds. */
  readonly holdMs?: { readonly min: number; readonly spread: number };
  /**
   * Whom kills and pauses strike: a worker that holds a grant (`holders`, by default: then somebody else waits for it),
   * or, every other time, one that holds nothing and waits (`holders-and-waiters`: its waiter rows are left behind,
   * and a release may hand the name to a waiter that is gone).
   */
  readonly strike?: 'holders' | 'holders-and-waiters';
  /**
   * Judges the grants that no caller received (see `SoakJudgeOptions.unreceivedBoundMs`): each must have ended
   * within this many ms of its grant. Not judged without it.
   */
  readonly unreceivedBoundMs?: number;
}

/** What a soak run did and saw. */
export interface SoakRun {
  readonly verdict: SoakVerdict;
  readonly faults: Record<SoakFault, number>;
  readonly closeMs: number[];
  readonly hung: string[];
  /** The faults made, in order. */
  readonly timeline: readonly SoakFaultMoment[];
}

/** mulberry32: a small seeded generator of numbers in [0, 1), so that a failed run's fault schedule can be replayed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hrtimeMs = () => Number(process.hrtime.bigint()) / 1e6;

/** Runs `sql` on a connection of its own to the server (not through the proxy). */
async function onServer<R>(url: string, sql: string, values: unknown[] = []): Promise<R[]> {
  if (url.startsWith('mysql:')) {
    // The injector's own connection, right after a restart's crash recovery and the workers' reconnections: the server
  // may take seconds to answer a new handshake, which is not what the soak tests (a 2 s limit failed whole runs).
  const connection = await mysql.createConnection({ uri: url, connectTimeout: 15_000 });
    try {
      return (await connection.query(sql, values))[0] as R[];
    } finally {
      await connection.end();
    }
  }
  const client = await connectClient(url);
  try {
    return (await client.query(sql.replace(/\?/g, (_, i: number) => `$${sql.slice(0, i).split('?').length}`), values)).rows as R[];
  } finally {
    await client.end();
  }
}

/** Ends every session of the soak's database but the one asking (PostgreSQL: pg_terminate_backend; MariaDB: KILL). */
async function terminateSessions(url: string): Promise<void> {
  if (!url.startsWith('mysql:')) {
    await onServer(url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`);
    return;
  }
  // The injector's own connection, right after a restart's crash recovery and the workers' reconnections: the server
  // may take seconds to answer a new handshake, which is not what the soak tests (a 2 s limit failed whole runs).
  const connection = await mysql.createConnection({ uri: url, connectTimeout: 15_000 });
  try {
    const [rows] = await connection.query(`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND DB = DATABASE()`);
    for (const { id } of rows as Array<{ id: number }>) await connection.query(`KILL CONNECTION ${Number(id)}`).catch(() => undefined);
  } finally {
    await connection.end();
  }
}

/** Waits until the server answers (after a restart). */
async function answering(url: string): Promise<void> {
  for (let i = 0; ; i++) {
    if (await onServer(url, 'SELECT 1').then(() => true, () => false)) return;
    if (i > 600) throw new Error('the server did not answer within 60 s');
    await sleep(100);
  }
}

/**
 * A randomized fault soak: `workers` processes (test/support/soak-worker.child.mjs) contend for `names` through a
 * proxy in front of `server`, making fenced writes, while faults drawn from a seeded generator strike one after the
 * other for `budgetMs`: kill -9 and respawn of a worker, SIGSTOP past the lease then SIGCONT, a fast restart, an
 * immediate restart (a crash), a network freeze of every connection, every session terminated. Then a quiet period
 * (two leases and a reaper interval: leftovers of the faults are freed), the workers stop, and the run is judged.
 */
export async function runSoak(server: RestartableServer, options: SoakOptions): Promise<SoakRun> {
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const url = server.url;
  await onServer(url, 'CREATE TABLE soak_counter (name varchar(100) PRIMARY KEY, n int NOT NULL, token bigint NOT NULL)');
  await onServer(url, 'CREATE TABLE soak_ledger (id varchar(200) PRIMARY KEY, name varchar(100) NOT NULL, token bigint NOT NULL, prev_token bigint NOT NULL)');
  for (const name of options.names) await onServer(url, 'INSERT INTO soak_counter (name, n, token) VALUES (?, 0, 0)', [name]);
  const proxy = await startResetProxy(url);
  const appIds = Array.from({ length: options.workers }, (_, i) => `soak${i + 1}`);
  const workers = startSoakWorkers(appIds, {
    DATABASE_URL: proxy.via(url),
    NAMES: options.names.join(','),
    LEASE_MS: String(options.leaseMs),
    RENEW_MS: String(options.renewMs),
    REAPER_MS: String(options.reaperMs),
    ...(options.callers === undefined ? {} : { CALLERS: String(options.callers) }),
    ...(options.waitMs === undefined ? {} : { WAIT_MS: String(options.waitMs) }),
    ...(options.waitRecheckMs === undefined ? {} : { WAIT_RECHECK_MS: String(options.waitRecheckMs) }),
    ...(options.holdMs === undefined ? {} : { HOLD_MIN_MS: String(options.holdMs.min), HOLD_SPREAD_MS: String(options.holdMs.spread) }),
  });
  const faults = Object.fromEntries(SOAK_FAULTS.map((kind) => [kind, 0])) as Record<SoakFault, number>;
  const crashes: number[] = [];
  const timeline: SoakFaultMoment[] = [];
  let strikes = 0;
  const now = (): Moment => ({ hr: hrtimeMs(), wall: Date.now() });
  try {
    const end = Date.now() + options.budgetMs;
    // Rounds of every kind of fault, each round in a random order: every kind strikes, whatever the seed.
    const round: SoakFault[] = [];
    while (Date.now() < end) {
      await sleep(1000 + random() * 2500);
      if (round.length === 0) round.push(...[...SOAK_FAULTS].sort(() => random() - 0.5));
      const kind = round.shift()!;
      // Kills and pauses strike a holder when one holds a grant (then somebody else waits for it); with
      // `holders-and-waiters`, every other one strikes a worker that holds nothing (it only waits).
      const holding = workers.holding();
      const waiterTurn = options.strike === 'holders-and-waiters' && (kind === 'kill' || kind === 'pause') && strikes++ % 2 === 1;
      const waiting = appIds.filter((appId) => !holding.includes(appId));
      const targets = waiterTurn ? waiting : holding;
      const target = targets.length > 0 && kind !== 'terminate' ? pick(targets) : pick(appIds);
      faults[kind]++;
      const from = now();
      switch (kind) {
        case 'kill':
          await workers.kill(target);
          break;
        case 'pause': {
          let live = workers.live(target);
          for (let i = 0; !live && i < 100; i++) live = (await sleep(100), workers.live(target)); // starting again
          const ms = options.leaseMs + 800 + random() * 1500;
          await (live ? workers.pause(live, ms) : sleep(ms));
          break;
        }
        case 'fast-restart':
          await server.stop();
          await sleep(200 + random() * 1000);
          await server.start();
          break;
        case 'immediate-restart':
          await server.crash();
          crashes.push(hrtimeMs());
          await sleep(random() * 500);
          await server.start();
          break;
        case 'freeze':
          await proxy.freeze(500 + random() * 2500);
          break;
        case 'terminate':
          await terminateSessions(url);
          break;
      }
      timeline.push({ kind, target: kind === 'kill' || kind === 'pause' ? target : undefined, from, to: now() });
    }
    await answering(url);
    // The quiet period: what a fault left (a release undone by a crash, a lease of a paused holder) ends.
    await sleep(2 * options.leaseMs + options.reaperMs + 1000);
  } finally {
    await answering(url).catch(() => undefined);
  }
  const { closeMs, hung } = await workers.stop(30_000);
  await proxy.close();
  const verdict = judgeSoak(workers.incarnations, await readState(url, appIds), crashes, {
    timeline,
    ...(options.unreceivedBoundMs === undefined
      ? {}
      : { unreceivedBoundMs: options.unreceivedBoundMs, unreceivedNearFaultBoundMs: options.leaseMs + options.reaperMs + 2000 }),
  });
  return { verdict, faults, closeMs, hung, timeline };
}

/** The soak's tables, the log's final statuses, and the lock and waiter rows the app ids left. */
async function readState(url: string, appIds: readonly string[]): Promise<SoakDatabaseState> {
  const ids = appIds.map(() => '?').join(', ');
  const counter = await onServer<{ n: unknown }>(url, 'SELECT SUM(n) AS n FROM soak_counter');
  const ledger = await onServer<{ id: string; name: string; token: unknown; prev_token: unknown }>(url, 'SELECT id, name, token, prev_token FROM soak_ledger');
  const log = await onServer<{ stamp: unknown; status: string; lock_names: unknown; done: unknown }>(
    url,
    `SELECT stamp, status, lock_names, business_done IS NOT NULL AS done FROM locking_log WHERE app_id IN (${ids})`,
    [...appIds],
  );
  // Every grant's log row, its times as epoch ms of the database's clock (the same machine's as `Date.now()`).
  const epochMs = (column: string) =>
    url.startsWith('mysql:') ? `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${column}) / 1000` : `EXTRACT(EPOCH FROM ${column})::float8 * 1000`;
  const grants = await onServer<{ stamp: unknown; app_id: string; instance: string; status: string; acquired: unknown; ended: unknown }>(
    url,
    `SELECT stamp, app_id, instance, status, ${epochMs('acquired')} AS acquired, ${epochMs('ended')} AS ended
       FROM locking_log WHERE app_id IN (${ids}) ORDER BY stamp`,
    [...appIds],
  );
  const left = async (table: string) =>
    Number((await onServer<{ n: unknown }>(url, `SELECT COUNT(*) AS n FROM ${table} WHERE app_id IN (${ids})`, [...appIds]))[0]?.n ?? 0);
  // What was left, row by row (a failure then says what it was).
  const leftRows = async (table: string) =>
    (await onServer<Record<string, unknown>>(url, `SELECT * FROM ${table} WHERE app_id IN (${ids})`, [...appIds])).map((row) => ({ table, row }));
  return {
    counter: Number(counter[0]?.n ?? 0),
    ledger: ledger.map((row) => ({ ...row, token: Number(row.token), prev_token: Number(row.prev_token) })),
    statusOf: new Map(log.filter((row) => namesOf(row.lock_names).length > 0).map((row) => [Number(row.stamp), row.status])),
    businessDone: new Set(log.filter((row) => row.done === true || Number(row.done) === 1).map((row) => Number(row.stamp))),
    grants: grants.map((row) => ({
      stamp: Number(row.stamp),
      appId: row.app_id,
      instance: row.instance,
      status: row.status,
      acquired: Number(row.acquired),
      ended: row.ended === null ? null : Number(row.ended),
    })),
    leftLocks: await left('locking'),
    leftWaiters: await left('locking_waiters'),
    leftRows: [...(await leftRows('locking')), ...(await leftRows('locking_waiters'))],
  };
}
