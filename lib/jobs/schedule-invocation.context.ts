import { AsyncLocalStorage } from 'node:async_hooks';
import type { RunRequest } from '../store/job-runs.store.js';

/**
 * One invocation of a job by its schedule: the function `@nestjs/schedule` registered for (instance, key) was called
 * by its timer at `firedAt` (this replica's clock). The first `@WithLocks` call of that same method on that same
 * instance within it is the tick; `taken` makes sure it is the only one (a retry or a recursion from inside the tick
 * sees the marker too, through the async context, and is no tick).
 * @internal
 */
export interface ScheduleInvocation {
  readonly instance: object;
  readonly key: string | symbol;
  /** `Date.now()` when the schedule invoked the job: names the tick. */
  readonly firedAt: number;
  /** A "run now" of the job this invocation runs instead of a tick (see `JobRequestsPoller`). */
  readonly request?: RunRequest;
  taken: boolean;
}

const invocations = new AsyncLocalStorage<ScheduleInvocation>();

/** Runs `fn` as the schedule's invocation of `instance[key]` (of the "run now" `request` when given). @internal */
export function runAsScheduleInvocation<T>(instance: object, key: string | symbol, fn: () => T, request?: RunRequest): T {
  return invocations.run({ instance, key, firedAt: Date.now(), taken: false, ...(request ? { request } : {}) }, fn);
}

/**
 * The schedule's invocation this call of `thisArg[key]` is the tick of, marked taken; undefined for any other call
 * (a direct call, a timer of the application, a second call from inside the tick, another method or instance).
 * @internal
 */
export function takeScheduleInvocation(thisArg: unknown, key: string | symbol): ScheduleInvocation | undefined {
  const invocation = invocations.getStore();
  if (invocation === undefined || invocation.taken || invocation.instance !== thisArg || invocation.key !== key) return undefined;
  invocation.taken = true;
  return invocation;
}
