import { LockError } from './lock.error.js';

/**
 * A `@WithLocks` method asked for a write lock on a name that its own call chain holds for read. Upgrading in place
 * could deadlock against another reader doing the same, so it is refused at once instead of waiting forever.
 * @publicApi
 */
export class LockUpgradeError extends LockError {
  constructor(
    /** The lock name held for read and asked for write. */
    readonly lockName: string,
    /** The method, as `Class.method`. */
    readonly target: string,
  ) {
    super(`${target} asks for ${lockName} (write) while its caller holds ${lockName} (read); ask for write up front`);
  }
}
