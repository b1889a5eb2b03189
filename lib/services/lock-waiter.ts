import { randomUUID } from 'node:crypto';
import { LockShutdownError, LockStoreError, LockWaitAbortedError } from '../errors/index.js';
import type { LockRequest } from '../interfaces/index.js';
import type { LockStore } from '../store/lock.store.js';
import type { LockNotifications } from './lock-notifications.service.js';

/** What a wait needs. @internal */
export interface WaitContext {
  readonly store: LockStore;
  /** One acquisition attempt of the group for `waiter` (it checks the instance lock and records the lease's start). */
  readonly attempt: (waiter: string) => Promise<number>;
  readonly notifications: LockNotifications;
  /** Longest sleep between two checks without a notification. */
  readonly recheckMs: number;
}

/** The error a stopped wait rejects with: the shutdown's own, or the caller's abort. */
function stopError(signal: AbortSignal): LockWaitAbortedError {
  return signal.reason instanceof LockShutdownError ? signal.reason : new LockWaitAbortedError(signal.reason);
}

/**
 * Waits for a whole group until `deadline` (a `Date.now()` value). In this order, so that no release can slip
 * between the checks unnoticed: the process LISTENs, the waiter registers (its rows give it its place in the order
 * of waiters, and a waiting writer makes the readers behind it yield), then it tries, and tries again on every
 * notification for its names and at least every `recheckMs`. A release that commits before the registration is
 * seen by the first attempt; one that commits after it sees the waiter and notifies.
 *
 * The database may fail for a moment while the waiter waits (a restart, a dropped connection): an attempt or a
 * registration whose outcome is known (nothing granted) is simply made again until the deadline, which then reports
 * the last failure; an attempt whose outcome is unknown ends the wait with its error.
 *
 * Resolves with the stamp, or 0 at the deadline. When `signal` fires it rejects with `LockWaitAbortedError` (or the
 * `LockShutdownError` that is the signal's reason), also when the attempt in flight at that moment was granted: the
 * grant is released first. Its waiter rows are removed however it ends.
 * @internal
 */
export async function waitForGroup(
  context: WaitContext,
  group: readonly LockRequest[],
  deadline: number,
  signal: AbortSignal,
): Promise<number> {
  const waiter = randomUUID();
  const ttlMs = context.recheckMs * 3;
  let woken = false;
  let wake: () => void = () => undefined;
  const unsubscribe = context.notifications.subscribe(
    group.map((r) => r.name),
    () => {
      woken = true;
      wake();
    },
  );
  const onAbort = () => wake();
  signal.addEventListener('abort', onAbort);
  let registered = false;
  try {
    await context.notifications.listening();
    if (signal.aborted) throw stopError(signal);
    registered = true; // also when the registration fails halfway: removing rows that are not there is harmless
    let registeredAt = -Infinity;
    const register = async () => {
      await context.store.registerWaiter(waiter, group, ttlMs).then(
        () => void (registeredAt = Date.now()),
        (error: unknown) => knownFailure(error),
      );
    };
    let failure: LockStoreError | undefined;
    const knownFailure = (error: unknown): void => {
      if (!(error instanceof LockStoreError) || error.outcomeUnknown) throw error;
      failure = error;
    };
    await register();
    for (;;) {
      woken = false;
      let stamp = 0;
      try {
        stamp = await context.attempt(waiter);
        failure = undefined;
      } catch (error) {
        knownFailure(error);
      }
      if (stamp > 0) registered = false; // the granting statement removed the waiter's rows
      if (signal.aborted) {
        // Nobody is left to use the grant; should the release fail, its lease runs out and the reaper frees it.
        if (stamp > 0) await context.store.release(stamp).catch(() => undefined);
        throw stopError(signal);
      }
      if (stamp > 0) return stamp;
      const left = deadline - Date.now();
      if (left <= 0) {
        if (failure) throw failure;
        return 0;
      }
      if (Date.now() - registeredAt > ttlMs / 3) {
        await register();
        void context.notifications.listening(); // opens the connection again if it broke and could not be reopened
      }
      // A notification that arrived while we were trying means: try again at once.
      if (!woken && !signal.aborted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, context.recheckMs));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => undefined;
      }
      if (signal.aborted) throw stopError(signal);
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    unsubscribe();
    // Should this fail (the database is gone), the rows expire by themselves within `ttlMs`.
    if (registered) await context.store.unregisterWaiter(waiter).catch(() => undefined);
  }
}
