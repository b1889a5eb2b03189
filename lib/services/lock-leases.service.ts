import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockLostError } from '../errors/index.js';
import { LockStore } from '../store/lock.store.js';

/**
 * The grants this process holds, each with an `AbortController` (made when somebody first asks for its signal: most
 * grants never need one) that fires when the grant is known to be lost. The renewal task extends all of their leases
 * in one statement; a grant the renewal no longer finds (reaped, recovered) is aborted, and so is every grant when the
 * instance loses its `appId`.
 * @internal
 */
@Injectable()
export class LockLeases {
  private readonly logger = new Logger('LockModule');
  private readonly held = new Map<number, AbortController | null>();

  constructor(@Inject(LockStore) private readonly store: LockStore) {}

  /** Starts tracking a new grant. */
  track(stamp: number): void {
    this.held.set(stamp, null);
  }

  /** Stops tracking a released grant (its signal stays as it is). */
  forget(stamp: number): void {
    this.held.delete(stamp);
  }

  /** Whether this process still holds `stamp` as far as it knows (renewals keep that knowledge fresh). */
  isHeld(stamp: number): boolean {
    return this.held.has(stamp);
  }

  /** The grant's signal; an already aborted one for a stamp this process does not hold. */
  signal(stamp: number): AbortSignal {
    if (!this.held.has(stamp)) return AbortSignal.abort(new LockLostError(stamp, 'not held by this process'));
    let controller = this.held.get(stamp);
    if (!controller) {
      controller = new AbortController();
      this.held.set(stamp, controller);
    }
    return controller.signal;
  }

  /** Marks one grant lost. */
  lose(stamp: number, reason: string): void {
    if (!this.held.has(stamp)) return;
    const controller = this.held.get(stamp);
    this.held.delete(stamp);
    this.logger.error(`Locks of stamp ${stamp} lost: ${reason}`);
    controller?.abort(new LockLostError(stamp, reason));
  }

  /** Marks every grant lost (recovery ran, or the instance lost its app id). */
  loseAll(reason: string): void {
    for (const stamp of [...this.held.keys()]) this.lose(stamp, reason);
  }

  /** Extends every lease in one statement; grants that are gone are aborted. */
  async renew(): Promise<void> {
    const stamps = [...this.held.keys()];
    if (stamps.length === 0) return;
    const renewed = await this.store.renew(stamps);
    for (const stamp of stamps) {
      // A stamp released while the renewal was in flight is no longer tracked: not a loss.
      if (!renewed.has(stamp) && this.held.has(stamp)) this.lose(stamp, 'its lease expired and it was reaped');
    }
  }
}
