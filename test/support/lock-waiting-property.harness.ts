import { setTimeout as sleep } from 'node:timers/promises';
import { LockWaitAbortedError, parseLockGroup, type LockPermits } from 'nestjs-db-locks';
import { GrantChecker } from './grant-checker.js';
import { createLockApp, type LockApp } from './lock-app.js';
import { randomGroup, writePermits } from './lock-property.harness.js';
import type { TestDatabase } from './test-database.js';

/** Shape of a waiting property run. */
export interface WaitingRunOptions {
  instances: number;
  callersPerInstance: number;
  /** Attempts per caller. */
  rounds: number;
  names: readonly string[];
  /** Permits rows written before the run; names without one use `defaults`. */
  permits: Record<string, Partial<LockPermits>>;
  defaults: LockPermits;
  /** `waitRecheckMs` of every instance. */
  recheckMs: number;
  /** Longest `waitMs` drawn (a third of the attempts do not wait). */
  maxWaitMs: number;
  /** The stated bound: while nothing is held and somebody waits, some waiter is granted within this. */
  progressBoundMs: number;
  /**
   * A condition on `locking_waiters` that keeps the rows of calls still waiting: on PostgreSQL `granted IS NULL` (the
   * rows of a grant a release handed over stay, marked, until that grant's release). None by default.
   */
  waitingRows?: string;
}

/** What a waiting property run observed. */
export interface WaitingRunResult {
  grants: number;
  waits: number;
  aborted: number;
  /** Breaches of (a) permits, (b) progress, (c) waiter rows. */
  violations: string[];
}

/**
 * Many callers on several instances take random multi-name groups of readers and writers with random `waitMs` (some
 * aborted midway), while the harness checks: (a) permits are never exceeded (by the holders' own view and by database
 * snapshots); (b) whenever nothing is held and somebody waits, some waiter is granted within `progressBoundMs` (with
 * nothing held every group is grantable: permits are at least 1); (c) no waiter row outlives its waiter (per
 * instance, a snapshot never shows more waiters than calls waiting at some moment of that snapshot, and none at the
 * end).
 */
export async function runWaitingProperty(db: TestDatabase, options: WaitingRunOptions): Promise<WaitingRunResult> {
  await writePermits(db, options.permits);
  const permitsOf = (name: string): LockPermits => ({ ...options.defaults, ...options.permits[name] });
  const checker = new GrantChecker(permitsOf);
  const violations: string[] = [];
  const apps: LockApp[] = [];
  for (let i = 0; i < options.instances; i++) {
    const appId = `wait-${i}`;
    const settings = { appId, defaultPermits: options.defaults, waitRecheckMs: options.recheckMs };
    apps.push(await createLockApp(db.url, settings, options.callersPerInstance + 2));
  }

  // (b): nothing held and somebody waiting starts the clock; a grant (something held) or no waiter stops it.
  let held = 0;
  let waiting = 0;
  let stall: NodeJS.Timeout | undefined;
  const progress = () => {
    if (held === 0 && waiting > 0) {
      stall ??= setTimeout(
        () => violations.push(`(b) ${waiting} waiter(s), nothing held, no grant for ${options.progressBoundMs} ms`),
        options.progressBoundMs,
      );
    } else if (stall) {
      clearTimeout(stall);
      stall = undefined;
    }
  };

  // (c): per instance, the calls waiting now, and the most that waited since a snapshot was sent.
  const waitingNow = new Map<string, number>();
  const waitingSince = new Map<string, number>();
  const enterWait = (appId: string, delta: number) => {
    const now = (waitingNow.get(appId) ?? 0) + delta;
    waitingNow.set(appId, now);
    waitingSince.set(appId, Math.max(waitingSince.get(appId) ?? 0, now));
    waiting += delta;
    progress();
  };

  let running = true;
  const sampler = (async () => {
    while (running) {
      for (const appId of waitingNow.keys()) waitingSince.set(appId, waitingNow.get(appId) ?? 0);
      const [waiters, counts] = await Promise.all([
        // SQL that PostgreSQL and MySQL both run; counts arrive as strings or numbers.
        db.query<{ app_id: string; n: number | string }>(
          `SELECT app_id, COUNT(DISTINCT waiter) AS n FROM locking_waiters
            ${options.waitingRows ? `WHERE ${options.waitingRows}` : ''} GROUP BY app_id`,
        ),
        db.query<{ lock_name: string; r: number | string; w: number | string }>(
          `SELECT lock_name, SUM(CASE WHEN mode = 'R' THEN 1 ELSE 0 END) AS r,
                  SUM(CASE WHEN mode = 'W' THEN 1 ELSE 0 END) AS w
             FROM locking GROUP BY lock_name`,
        ),
      ]).then(([w, c]) => [
        w.map((row) => ({ ...row, n: Number(row.n) })),
        c.map((row) => ({ ...row, r: Number(row.r), w: Number(row.w) })),
      ] as const);
      for (const { app_id, n } of waiters) {
        if (n > (waitingSince.get(app_id) ?? 0)) violations.push(`(c) ${app_id}: ${n} waiters in the table`);
      }
      for (const { lock_name, r, w } of counts) {
        const permits = permitsOf(lock_name);
        if ((r > 0 && w > 0) || r > permits.read || w > permits.write) {
          violations.push(`(a) snapshot: ${lock_name} held by ${w} writer(s) and ${r} reader(s)`);
        }
      }
      await sleep(5);
    }
  })();

  let grants = 0;
  let waits = 0;
  let aborted = 0;
  const caller = async (app: LockApp, appId: string) => {
    for (let round = 0; round < options.rounds; round++) {
      const group = parseLockGroup(randomGroup(options.names));
      const waitMs = Math.random() < 1 / 3 ? 0 : 1 + Math.floor(Math.random() * options.maxWaitMs);
      const controller = new AbortController();
      const abort = Math.random() < 0.15 ? setTimeout(() => controller.abort(), Math.random() * waitMs) : undefined;
      if (waitMs > 0) {
        waits++;
        enterWait(appId, 1);
      }
      let stamp = 0;
      try {
        stamp = await app.locks.tryLocks(group, { waitMs, signal: controller.signal });
      } catch (error) {
        if (!(error instanceof LockWaitAbortedError)) throw error;
        aborted++;
      } finally {
        clearTimeout(abort);
        if (waitMs > 0) enterWait(appId, -1);
      }
      if (stamp === 0) continue;
      grants++;
      held++;
      progress();
      checker.enter(group, stamp);
      await sleep(Math.random() * 20);
      checker.leave(group);
      held--;
      progress();
      await app.locks.releaseLocks(stamp);
    }
  };
  try {
    await Promise.all(
      apps.flatMap((app, i) => Array.from({ length: options.callersPerInstance }, () => caller(app, `wait-${i}`))),
    );
  } finally {
    running = false;
    clearTimeout(stall);
    await sampler;
    await Promise.all(apps.map((app) => app.close()));
  }
  const left = await db.query('SELECT lock_name, waiter FROM locking_waiters');
  if (left.length > 0) violations.push(`(c) ${left.length} waiter row(s) left at the end`);
  return { grants, waits, aborted, violations: [...checker.violations.map((v) => `(a) ${v}`), ...violations] };
}

/** `waitRecheckMs` of the specs' runs: a missed notification would only be caught up this late. */
const RECHECK_MS = 1500;

/**
 * The run of the waiting property specs. The progress bound is the one docs/lock-semantics.md states ("Fairness, and no cycle"):
 * while nothing is held and somebody waits, the earliest waiter's group is free and it is woken by the release (or
 * the departure of a writer ahead) that cleared its way; its next attempt is granted. At worst, without any
 * notification, within `waitRecheckMs`; plus one attempt's round trip on a loaded 2-core machine.
 */
export const WAITING_RUN = {
  instances: 3,
  callersPerInstance: 4,
  rounds: 20,
  names: ['WA', 'WB', 'WC', 'WD', 'WE'],
  permits: { WA: { read: 3 }, WB: { write: 2 } },
  defaults: { read: 2, write: 1 },
  recheckMs: RECHECK_MS,
  maxWaitMs: 6000,
  progressBoundMs: RECHECK_MS + 1000,
};
