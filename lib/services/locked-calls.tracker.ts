import { Inject, Injectable, Logger } from '@nestjs/common';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';

/**
 * A holder that shutdown cannot await as a Promise: a live subscription of a locked Observable, an `acquireLocks`
 * handle. Shutdown tells it, waits for it within `shutdownGraceMs`, then ends it. @internal
 */
export interface ShutdownHolder {
  /** What it is, for the warning when the grace period ends before it does. */
  readonly description: string;
  /** Shutdown has begun (called once; at once for a holder that starts after). */
  stopping(): void;
  /** The grace period is over and it still holds: end it and release what it holds. Never rejects. */
  end(): Promise<void>;
}

/**
 * The holders under way in this application, which shutdown waits for before it stops renewing their leases and
 * gives up the app id: the locked calls (`@WithLocks`, `withLocks`; `LockService` adds each), awaited to their end;
 * and the live subscriptions and `acquireLocks` handles, told when shutdown begins and waited for within
 * `shutdownGraceMs`, then ended.
 * @internal
 */
@Injectable()
export class LockedCallsTracker {
  private readonly logger = new Logger('LockModule');
  private readonly calls = new Set<Promise<unknown>>();
  /** Each holder, with what settles once it has ended (its locks released). */
  private readonly holders = new Map<ShutdownHolder, Promise<unknown>>();
  /** The acquisitions under way that make a holder when they succeed (`acquireLocks`). */
  private readonly starting = new Set<Promise<unknown>>();
  /** When the grace period ends (`performance.now()`); undefined until shutdown begins. */
  private graceEnds?: number;

  constructor(@Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions) {}

  /** Tracks `call` until it settles; returns it. */
  track<T>(call: Promise<T>): Promise<T> {
    this.calls.add(call);
    const forget = () => void this.calls.delete(call);
    call.then(forget, forget);
    return call;
  }

  /**
   * Tracks an acquisition that registers a holder (`hold`) before it resolves, until it settles: an acquisition in
   * flight when shutdown begins is waited for, then its holder. Returns it.
   */
  starts<T>(acquisition: Promise<T>): Promise<T> {
    this.starting.add(acquisition);
    const forget = () => void this.starting.delete(acquisition);
    acquisition.then(forget, forget);
    return acquisition;
  }

  /** Tracks `holder` until `ended` settles (its locks released); tells it at once when shutdown has begun. */
  hold(holder: ShutdownHolder, ended: Promise<unknown>): void {
    this.holders.set(holder, ended);
    const forget = () => void this.holders.delete(holder);
    ended.then(forget, forget);
    if (this.graceEnds !== undefined) holder.stopping();
  }

  /** Shutdown has begun: tells every holder, and starts the grace period. */
  beginShutdown(): void {
    if (this.graceEnds !== undefined) return;
    this.graceEnds = performance.now() + this.options.shutdownGraceMs;
    for (const holder of [...this.holders.keys()]) holder.stopping();
  }

  /** Resolves once every call under way now (and any it awaits) has settled, whatever their outcome. */
  async settled(): Promise<void> {
    while (this.calls.size > 0) await Promise.allSettled([...this.calls]);
  }

  /**
   * Resolves once every holder has ended: by itself within the grace period, or ended (and released) by the shutdown
   * when the period is over, each with a warning.
   */
  async holdersEnded(): Promise<void> {
    this.beginShutdown();
    const graceEnds = this.graceEnds!;
    const underWay = () => this.holders.size > 0 || this.starting.size > 0;
    while (underWay() && performance.now() < graceEnds) {
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceEnds - performance.now());
      });
      await Promise.race([Promise.allSettled([...this.starting, ...this.holders.values()]), graceOver]);
      clearTimeout(timer);
    }
    // Ended here are the holders still there at the end of the grace period, and any that began meanwhile.
    while (underWay()) {
      await Promise.allSettled([...this.starting]);
      await Promise.all(
        [...this.holders.keys()].map(async (holder) => {
          this.logger.warn(
            `${holder.description} still held its locks when shutdownGraceMs (${this.options.shutdownGraceMs} ms) ` +
              'ended: the shutdown ended it and released them',
          );
          await holder.end();
          this.holders.delete(holder);
        }),
      );
    }
  }
}
