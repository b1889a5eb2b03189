import { LockError } from './lock.error.js';

/**
 * `LockAdminService.forceRelease(stamp)` found no live grant with that stamp: unknown, or already released, reaped,
 * recovered or forced. Nothing was changed.
 * @publicApi
 */
export class GrantNotFoundError extends LockError {
  constructor(
    /** The stamp that matched no live grant. */
    readonly stamp: number,
  ) {
    super(`No live grant has stamp ${stamp} (unknown, or already released, reaped, recovered or forced)`);
  }
}
