import type { LockSpec } from './lock-spec.interface.js';

/**
 * What to do when the group is not available.
 * - `'throw'`: throw `LockNotAcquiredError` (HTTP 423 through `LockHttpInterceptor`);
 * - `'skip'`: do not run the method, log one line, and return `undefined`.
 * @publicApi
 */
export type LockUnavailableAction = 'throw' | 'skip';

/**
 * Options form of `@WithLocks` (and of `LockService.withLocks`).
 * @publicApi
 */
export interface WithLocksOptions {
  /** The group, e.g. `['WS2_WRITE', 'WS1_READ']`. */
  locks: readonly LockSpec[];
  /**
   * What to do when the group is not available.
   * @default 'skip' for `@Cron` / `@Interval` / `@Timeout` methods, 'throw' otherwise
   */
  onUnavailable?: LockUnavailableAction;
  /**
   * Wait up to this many milliseconds for the group before giving up (see `TryLocksOptions.waitMs`).
   * @default 0
   */
  waitMs?: number;
  /**
   * Seconds after which a retry makes sense; sent as `Retry-After` with HTTP 423.
   * @default none (no header)
   */
  retryAfterSeconds?: number;
}
