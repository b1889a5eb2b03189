/**
 * `Symbol.asyncDispose` (Node.js 20.19+ and 22.12+ define it), or the registered symbol of that name where the
 * runtime has none: a polyfill that sets `Symbol.asyncDispose = Symbol.for('Symbol.asyncDispose')` then works.
 */
const asyncDispose: typeof Symbol.asyncDispose =
  (Symbol as { asyncDispose?: typeof Symbol.asyncDispose }).asyncDispose ??
  (Symbol.for('Symbol.asyncDispose') as typeof Symbol.asyncDispose);

/**
 * A held group, as `LockService.acquireLocks` returns it: releases itself at the end of an `await using` block
 * (TypeScript 5.2+), or when `release()` is called.
 *
 * ```ts
 * await using grant = await locks.acquireLocks(['ORDERS_WRITE'], { waitMs: 5_000 });
 * if (!grant) return; // not available in time
 * await rebuild(grant.signal);
 * // released here, also when rebuild() throws
 * ```
 * @publicApi
 */
export interface LockGrantHandle extends AsyncDisposable {
  /** The grant's stamp, as `tryLocks` returns it (for `markBusinessDone`, `getFencingToken`, the admin API). */
  readonly stamp: number;
  /** Fires, with a `LockLostError` as its reason, when the grant is lost (see `LockService.getSignal`). */
  readonly signal: AbortSignal;
  /**
   * Releases the group (`LockService.releaseLocks`); later calls, and the end of the `await using` block, return the
   * first call's Promise: the group is released once.
   * @throws IllegalMonitorStateError when the grant was lost meanwhile (reaped, recovered or forced): the work after
   *   the loss ran without the locks.
   * @throws LockStoreError when the database cannot be reached: the release is retried in the background, and the
   *   locks are free within `leaseMs + reaperIntervalMs` in any case.
   */
  release(): Promise<void>;
  /** The same as `release()`: what `await using` calls at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** @internal */
export class OwnedLockGrant implements LockGrantHandle {
  private released?: Promise<void>;

  constructor(
    readonly stamp: number,
    readonly signal: AbortSignal,
    private readonly releaseLocks: (stamp: number) => Promise<void>,
  ) {}

  release(): Promise<void> {
    this.released ??= this.releaseLocks(this.stamp);
    return this.released;
  }

  [asyncDispose](): Promise<void> {
    return this.release();
  }
}
