import { Injectable } from '@nestjs/common';

/**
 * The locked calls under way in this application (`@WithLocks`, `withLocks`): `LockService` adds each, and shutdown
 * awaits them before it stops renewing their leases and gives up the app id.
 * @internal
 */
@Injectable()
export class LockedCallsTracker {
  private readonly calls = new Set<Promise<unknown>>();

  /** Tracks `call` until it settles; returns it. */
  track<T>(call: Promise<T>): Promise<T> {
    this.calls.add(call);
    const forget = () => void this.calls.delete(call);
    call.then(forget, forget);
    return call;
  }

  /** Resolves once every call under way now (and any it awaits) has settled, whatever their outcome. */
  async settled(): Promise<void> {
    while (this.calls.size > 0) await Promise.allSettled([...this.calls]);
  }
}
