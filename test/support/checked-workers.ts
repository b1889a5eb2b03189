import type { LockRequest } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { GrantChecker } from './grant-checker.js';
import type { LockApp } from './lock-app.js';

/** What `runCheckedWorkers` saw. */
export interface CheckedWorkersReport {
  readonly grants: number;
  /** Every error a call threw (typed or not): none is expected. */
  readonly errors: readonly unknown[];
  /** Overlaps beyond one writer or one reader per name, seen from the holders' side (`GrantChecker`). */
  readonly violations: readonly string[];
}

/**
 * Real concurrent clients: `workers` loops per instance each make `attempts` acquisitions of `group(i)` (waiting
 * `waitMs(i)`), hold a granted group for a millisecond and release it. Permits are one writer or one reader.
 */
export async function runCheckedWorkers(
  instances: readonly LockApp[],
  options: {
    workers: number;
    attempts: number;
    group: (i: number) => LockRequest[];
    waitMs: (i: number) => number;
  },
): Promise<CheckedWorkersReport> {
  const checker = new GrantChecker(() => ({ read: 1, write: 1 }));
  const errors: unknown[] = [];
  let grants = 0;
  const worker = async (app: LockApp, seed: number) => {
    for (let i = seed; i < seed + options.attempts; i++) {
      const group = options.group(i);
      try {
        const stamp = await app.locks.tryLocks(group, { waitMs: options.waitMs(i) });
        if (stamp === 0) continue;
        grants++;
        checker.enter(group, stamp);
        await sleep(1);
        checker.leave(group);
        await app.locks.releaseLocks(stamp);
      } catch (error) {
        errors.push(error);
      }
    }
  };
  await Promise.all(
    instances.flatMap((app, a) => Array.from({ length: options.workers }, (_, w) => worker(app, a * 10 + w))),
  );
  return { grants, errors, violations: checker.violations };
}
