import { shortText } from './error-value.util.js';
import { LockError } from './lock.error.js';

/**
 * An argument of a `LockService` method is invalid (a stamp that is not a positive safe integer, a permits count
 * that is not an integer ≥ 1, an unknown mode). Thrown before any database call; nothing was changed.
 * @publicApi
 */
export class InvalidLockArgumentError extends LockError {
  constructor(
    /** Name of the argument. */
    readonly argument: string,
    /** The value that was refused. */
    readonly value: unknown,
    /** What the argument must be. */
    readonly expected: string,
  ) {
    super(`Invalid ${argument} ${shortText(String(value))}: expected ${expected}`);
  }
}
