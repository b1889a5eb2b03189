import { randomUUID } from 'node:crypto';
import { LockStoreError, LockWaitAbortedError } from '../errors/index.js';
import type { LockRequest } from '../interfaces/index.js';
import type { LockStore } from '../store/lock.store.js';
import type { LockNotifications } from './lock-notifications.service.js';

/** What a wait needs. @internal */
export interface WaitContext {
  readonly store: LockStore;
  /** One acquisition attempt of the group (it records when it was sent, for the lease). */
  readonly attempt: (waiter: string) => Promise<number>;
  readonly notifications: LockNotifications;
  /** Longest sleep between two checks without a notification. */
  readonly recheckMs: number;
}

/**
 * Waits for a whole group until `deadline` (a `Date.now()` value): registers the waiter (a waiting writer makes new
 * readers yield), then tries again on every notification for its names and at least every `recheckMs`. Resolves with
 * the stamp, or 0 at the deadline; rejects with `LockWaitAbortedError` when `signal` fires. Its waiter rows are
 * removed however it ends.
 * @internal
 */
export async function waitForGroup(
  context: WaitContext,
  group: readonly LockRequest[],
  deadline: number,
  signal: AbortSignal | undefined,
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
  signal?.addEventListener('abort', onAbort);
  let granted = false;
  // The database may fail for a moment while we wait (a restart, a dropped connection): an attempt whose outcome is
  // known (nothing granted) is simply tried again until the deadline, which then reports the last failure.
  let failure: LockStoreError | undefined;
  let registeredAt = -Infinity;
  const register = async () => {
    try {
      await context.store.registerWaiter(waiter, group, ttlMs);
      registeredAt = Date.now();
    } catch (error) {
      if (!(error instanceof LockStoreError)) throw error;
    }
  };
  try {
    await register();
    for (;;) {
      if (signal?.aborted) throw new LockWaitAbortedError(signal.reason);
      woken = false;
      let stamp = 0;
      try {
        stamp = await context.attempt(waiter);
        failure = undefined;
      } catch (error) {
        if (!(error instanceof LockStoreError) || error.outcomeUnknown) throw error;
        failure = error;
      }
      if (stamp > 0) {
        granted = true; // the granting statement removed the waiter's rows
        return stamp;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        if (failure) throw failure;
        return 0;
      }
      if (Date.now() - registeredAt > ttlMs / 3) await register();
      // A notification that arrived while we were trying means: try again at once.
      if (!woken) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, context.recheckMs));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => undefined;
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    unsubscribe();
    // A failure here must not hide how the wait ended (an ambiguous attempt's error above all); rows left behind
    // expire on their own.
    if (!granted) await context.store.unregisterWaiter(waiter).catch(() => undefined);
  }
}
