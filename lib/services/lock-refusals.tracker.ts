import type { LockConfigurationError } from '../errors/index.js';

/**
 * The acquisitions the configuration refused (`LockConfigurationError` from the store: a session that does not run
 * READ COMMITTED, a pool too small, …), for the health check. A session's settings can change after start-up (a
 * pooled connection opened later under a changed role or database setting, the instance session opened again), and
 * the health probe's own connection may not be one of those: what the acquisitions met is reported as it is.
 * @internal
 */
export class LockRefusals {
  private last?: { readonly message: string; readonly at: number };
  /** Whether an acquisition was answered (granted or busy) after the last refusal. */
  private answeredSince = false;

  /** An acquisition was refused with `error`. */
  refused(error: LockConfigurationError): void {
    this.last = { message: error.message, at: performance.now() };
    this.answeredSince = false;
  }

  /** An acquisition was answered (granted, or busy): the configuration let it run. */
  answered(): void {
    if (this.last) this.answeredSince = true;
  }

  /**
   * The problem to report now, or undefined: a refusal stays one until an acquisition was answered after it and
   * `forMs` has passed since it (a pool may mix connections that refuse with connections that work).
   */
  problem(forMs: number): string | undefined {
    const last = this.last;
    if (last === undefined) return undefined;
    const agoMs = Math.round(performance.now() - last.at);
    if (this.answeredSince && agoMs >= forMs) {
      this.last = undefined;
      return undefined;
    }
    return `Acquisitions are refused (the last ${agoMs} ms ago): ${last.message}`;
  }
}
