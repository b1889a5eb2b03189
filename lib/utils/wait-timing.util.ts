/**
 * Timing helpers of the waits: bounded awaits, jittered pauses and abortable sleeps.
 * @internal
 */

/** A signal that never fires. */
export const NEVER: AbortSignal = new AbortController().signal;

/**
 * Settles with `{ value }` (or rejects) as `work` does, or with undefined once `until` (a `Date.now()` value) has
 * passed or `signal` has fired, whichever comes first; `work` then goes on unobserved (the caller deals with it).
 */
export function bounded<T>(work: Promise<T>, until: number, signal: AbortSignal): Promise<{ value: T } | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', expire);
    };
    const expire = () => {
      done();
      resolve(undefined);
    };
    const timer = setTimeout(expire, Math.max(0, until - Date.now()));
    signal.addEventListener('abort', expire);
    work.then(
      (value) => {
        done();
        resolve({ value });
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}

/** `ms` scaled by a random factor in [0.5, 1): spreads the retries of many waiters. */
export function jittered(ms: number): number {
  return ms * (0.5 + Math.random() / 2);
}

/** Resolves after `ms`, or at once when `signal` fires. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done);
  });
}
