/**
 * Base class of every error thrown by nestjs-db-locks.
 *
 * Catch `LockError` to handle anything the lock machinery raises; errors thrown by your own code are never wrapped.
 * @publicApi
 */
export abstract class LockError extends Error {
  /** The error's class name, e.g. `'LockStoreError'`. */
  override readonly name: string;

  protected constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
