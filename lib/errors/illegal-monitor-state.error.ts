import { LockError } from './lock.error.js';

/**
 * `releaseLocks(stamp)` matched no lock of this application: the stamp is unknown, belongs to another `appId`, was
 * already released, or was freed by a reaper, a recovery or a forced release. `reason` says which, from the lock log
 * (who forced it and why, for a forced release). Mirrors Java's `IllegalMonitorStateException` (seed 000).
 * @publicApi
 */
export class IllegalMonitorStateError extends LockError {
  constructor(
    /** The stamp that matched nothing. */
    readonly stamp: number,
    /** The `appId` the release was made for. */
    readonly appId: string,
    /**
     * Why nothing matched, from the lock log: e.g. `'it was already released'`, `'its release was forced by alice:
     * stuck since 03:00'`. Undefined when it was not looked up.
     */
    readonly reason?: string,
  ) {
    super(
      `No locks held by app "${appId}" under stamp ${stamp}: ` +
        (reason ?? 'unknown, foreign, or already released, reaped, recovered or forced'),
    );
  }
}
