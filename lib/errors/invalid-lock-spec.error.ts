import { describeValue } from './error-value.util.js';
import { LockError } from './lock.error.js';

/**
 * A lock spec or a lock group is malformed: a bad name, an unknown mode, an empty group, or one name asked for in
 * both modes. Thrown before any database call; nothing was changed.
 * @publicApi
 */
export class InvalidLockSpecError extends LockError {
  constructor(
    /** The offending spec, as given (or the whole group for group-level problems). */
    readonly spec: unknown,
    /** Why it was refused. */
    readonly reason: string,
  ) {
    // The reason gives the size that matters in its unit (a name's bytes): the cut spec shows no count of its own.
    super(`Invalid lock spec ${describeValue(spec, false)}: ${reason}`);
  }
}
