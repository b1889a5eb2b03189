import { LockError } from './lock.error.js';

/**
 * `releaseLocks(stamp)` matched no lock of this application: the stamp is unknown, belongs to another `appId`, was
 * already released, or was freed by recovery. Mirrors Java's `IllegalMonitorStateException` (seed 000).
 * @publicApi
 */
export class IllegalMonitorStateError extends LockError {
  constructor(
    /** The stamp that matched nothing. */
    readonly stamp: number,
    /** The `appId` the release was made for. */
    readonly appId: string,
  ) {
    super(`No locks held by app "${appId}" under stamp ${stamp} (unknown, foreign, already released or recovered)`);
  }
}
