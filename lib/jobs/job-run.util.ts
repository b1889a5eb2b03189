import { LockLostError } from '../errors/index.js';
import { MAX_WAIT_MS } from '../lock.constants.js';
import type { ResolvedWithLocks } from '../utils/resolve-with-locks-options.util.js';
import type { ScheduledJob, TickPlan } from './job-tick.plan.js';

/**
 * How long a per-replica run waits for its locks (the replicas' runs take turns, never overlap): the user's `waitMs`
 * when given, else until the job's next tick; a `@Timeout` task waits until it gets them or the application shuts down
 * (shutdown ends waiters).
 * @internal
 */
export function perReplicaWaitMs(job: ScheduledJob, lock: ResolvedWithLocks, plan: TickPlan): number {
  if (lock.waitMs !== undefined) return lock.waitMs;
  if (job.schedule.kind === 'timeout') return MAX_WAIT_MS;
  const next = 'at' in plan.source ? plan.next(plan.source.at) : null;
  if (next === null || !Number.isFinite(next)) return MAX_WAIT_MS;
  return Math.min(MAX_WAIT_MS, Math.max(0, Math.floor(next - Date.now())));
}

/** Whether a run's error means its grant was lost while it ran. @internal */
export function isLockLost(error: unknown): boolean {
  return error instanceof LockLostError;
}

/** A run's error's name, for the history. @internal */
export function nameOf(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  return (typeof name === 'string' && name.length > 0 ? name : 'Error').slice(0, 200);
}

/** An error's message, for a log line. @internal */
export function messageOf(error: unknown): string {
  return (error as Error)?.message ?? String(error);
}
