import { LockWaitAbortedError, type LockSpec } from 'nestjs-db-locks';
import type { LockApp } from './lock-app.js';
import type { TestDatabase } from './test-database.js';
import { until } from './until.js';

/** What the callers of `runHotNameCallers` were told. */
export interface HotNameRun {
  /** Grants received. */
  readonly grants: number;
  /** Grants received while another caller held the name (one holder at a time: 0). */
  readonly overlaps: number;
  /** Stamps received that were not greater than the one before (tokens in grant order: none). */
  readonly outOfOrder: readonly number[];
}

/**
 * Callers that want one write lock, `lock` (`NAME_WRITE`), in a loop for `forMs`: `callersEach` per application, each
 * waiting for it, holding it across a turn of the event loop (a grant told to another caller meanwhile is counted as
 * an overlap), then releasing it. Judged from the holders' side.
 */
export async function runHotNameCallers(apps: readonly LockApp[], callersEach: number, lock: LockSpec, forMs: number): Promise<HotNameRun> {
  let holding = 0;
  let overlaps = 0;
  let lastToken = 0;
  const outOfOrder: number[] = [];
  let grants = 0;
  const end = Date.now() + forMs;
  const caller = async (app: LockApp) => {
    while (Date.now() < end) {
      const stamp = await app.locks.tryLocks([lock], { waitMs: 10_000 });
      if (stamp <= 0) throw new Error(`a wait for ${lock} ended without it`);
      if (++holding > 1) overlaps++;
      if (stamp <= lastToken) outOfOrder.push(stamp);
      lastToken = stamp;
      grants++;
      await new Promise((resolve) => setImmediate(resolve));
      holding--;
      await app.locks.releaseLocks(stamp);
    }
  };
  await Promise.all(apps.flatMap((app) => Array.from({ length: callersEach }, () => caller(app))));
  return { grants, overlaps, outOfOrder };
}

/** What `abortWaitsAsHandedOver` needs to look at in the database that differs by dialect. */
export interface HandOverProbes {
  /** Whether `HA`'s waiter has registered (one live row). */
  readonly waiting: () => Promise<boolean>;
  /** Whether a grant of `HA` was made after the stamp `held` (the release handed it over). */
  readonly handedAfter: (held: number) => Promise<boolean>;
}

/**
 * Thirty times: `holder` holds `HA_WRITE`, `waiter` waits for it, and its wait is aborted before, during or after the
 * release's hand-over commits. Every outcome is a grant the caller then releases, or `LockWaitAbortedError` with any
 * grant handed over given back at once (nothing left on the name within a second, not a lease). Answers how many waits were handed
 * the name as they were aborted.
 */
export async function abortWaitsAsHandedOver(
  holder: LockApp,
  waiter: LockApp,
  db: TestDatabase,
  probes: HandOverProbes,
): Promise<number> {
  // Nobody holds the name and no row of a waiter of it is left (the same SQL on both dialects).
  const settled = async () =>
    (await db.query(`SELECT 1 FROM locking WHERE lock_name = 'HA'`)).length === 0 &&
    (await db.query(`SELECT 1 FROM locking_waiters WHERE lock_name = 'HA'`)).length === 0;
  let handedThenAborted = 0;
  for (let i = 0; i < 30; i++) {
    const held = await holder.locks.tryLocks(['HA_WRITE']);
    const controller = new AbortController();
    const waiting = waiter.locks.tryLocks(['HA_WRITE'], { waitMs: 10_000, signal: controller.signal });
    await until(probes.waiting);
    const release = holder.locks.releaseLocks(held);
    await new Promise((resolve) => setTimeout(resolve, i % 4)); // the abort lands before, during or after the commit
    controller.abort();
    await release;
    const outcome = await waiting.then(
      (stamp) => stamp,
      (error: unknown) => error,
    );
    if (typeof outcome === 'number') {
      await waiter.locks.releaseLocks(outcome);
    } else {
      if (!(outcome instanceof LockWaitAbortedError)) throw outcome;
      if (await probes.handedAfter(held)) handedThenAborted++;
    }
    await until(settled, 1000);
  }
  return handedThenAborted;
}
