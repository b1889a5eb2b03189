import { LockShutdownError } from '../errors/index.js';
import type { ShutdownHolder } from './locked-calls.tracker.js';

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
 * A handle not yet released is a holder that `app.close()` waits for: when `close()` begins, its `signal` fires with a
 * `LockShutdownError` (the locks are still held: finish, then leave the block); `close()` waits for its release up to
 * `shutdownGraceMs`, then releases the group itself (with a warning in the log) before the database closes.
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
  /**
   * Fires when the holder should stop: with a `LockLostError` as its reason when the grant is lost (see
   * `LockService.getSignal`), or with a `LockShutdownError` when `app.close()` begins while the handle is not released
   * (the locks are still held then, until `release()` or the end of `shutdownGraceMs`). The first reason stays; ask
   * `LockService.isHeld(stamp)` whether the grant is still held.
   */
  readonly signal: AbortSignal;
  /**
   * Releases the group (`LockService.releaseLocks`); later calls, and the end of the `await using` block, return the
   * first call's Promise: the group is released once.
   * Once the shutdown has released the group (at the end of `shutdownGraceMs`), it resolves: the group was released
   * once, and the `LockShutdownError` of `signal` told the holder when `close()` began.
   * A grant whose fenced transaction committed, or whose fence threw `LockLostError`, is released quietly if it ended
   * meanwhile (`LockService.releaseLocks`).
   * @throws IllegalMonitorStateError when the grant was lost meanwhile (reaped, recovered or forced) and no fence told
   *   the holder: the work after the loss ran without the locks.
   * @throws LockStoreError when the database cannot be reached: the release is retried in the background, and the
   *   locks are free within `leaseMs + reaperIntervalMs` in any case.
   */
  release(): Promise<void>;
  /** The same as `release()`: what `await using` calls at the end of the block. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The handle `acquireLocks` returns, and a holder that the shutdown tells and waits for. @internal */
export class OwnedLockGrant implements LockGrantHandle, ShutdownHolder {
  readonly signal: AbortSignal;
  /** Fires when the shutdown begins. */
  private readonly shutdown = new AbortController();
  private released?: Promise<void>;
  private markEnded!: () => void;

  /**
   * @param lost the grant's signal (`LockLeases.signal`)
   * @param hold registers the handle with the shutdown, with what settles once it is released
   */
  constructor(
    readonly stamp: number,
    lost: AbortSignal,
    private readonly releaseLocks: (stamp: number) => Promise<void>,
    hold: (holder: ShutdownHolder, ended: Promise<void>) => void,
  ) {
    this.signal = AbortSignal.any([lost, this.shutdown.signal]);
    hold(this, new Promise<void>((resolve) => (this.markEnded = resolve)));
  }

  get description(): string {
    return `The acquireLocks handle of stamp ${this.stamp}`;
  }

  release(): Promise<void> {
    if (!this.released) {
      this.released = this.releaseLocks(this.stamp);
      this.released.then(this.markEnded, this.markEnded);
    }
    return this.released;
  }

  [asyncDispose](): Promise<void> {
    return this.release();
  }

  /** @internal */
  stopping(): void {
    this.shutdown.abort(new LockShutdownError());
  }

  /** @internal Its failure (the grant was lost: logged when found) is its holder's to see, through `release()`. */
  async end(): Promise<void> {
    await this.release().catch(() => undefined);
  }
}
