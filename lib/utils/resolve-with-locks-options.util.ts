import { InvalidLockSpecError } from '../errors/index.js';
import type { LockRequest, LockSpec, LockUnavailableAction, WithLocksOptions } from '../interfaces/index.js';
import { parseLockGroup } from './parse-lock-spec.util.js';

/** `WithLocksOptions` validated and parsed: the group in canonical order. @internal */
export interface ResolvedWithLocks {
  readonly requests: readonly LockRequest[];
  readonly onUnavailable?: LockUnavailableAction;
  readonly retryAfterSeconds?: number;
  readonly waitMs?: number;
}

/** True for `{ locks: [...] }`, false for a lock spec. @internal */
export function isWithLocksOptions(value: unknown): value is WithLocksOptions {
  return typeof value === 'object' && value !== null && 'locks' in value;
}

/** Parses `@WithLocks(...specs)` or `@WithLocks({ locks, ... })`; throws `InvalidLockSpecError`. @internal */
export function resolveWithLocks(args: readonly (LockSpec | WithLocksOptions)[]): ResolvedWithLocks {
  if (args.length === 1 && isWithLocksOptions(args[0])) {
    const { locks, onUnavailable, retryAfterSeconds, waitMs } = args[0];
    if (onUnavailable !== undefined && onUnavailable !== 'throw' && onUnavailable !== 'skip') {
      throw new InvalidLockSpecError(args[0], "onUnavailable must be 'throw' or 'skip'");
    }
    if (retryAfterSeconds !== undefined && !(Number.isInteger(retryAfterSeconds) && retryAfterSeconds >= 0)) {
      throw new InvalidLockSpecError(args[0], 'retryAfterSeconds must be a non-negative integer');
    }
    if (waitMs !== undefined && !(Number.isInteger(waitMs) && waitMs >= 0)) {
      throw new InvalidLockSpecError(args[0], 'waitMs must be a non-negative integer');
    }
    return { requests: parseLockGroup(locks), onUnavailable, retryAfterSeconds, waitMs };
  }
  if (args.some(isWithLocksOptions)) {
    throw new InvalidLockSpecError(args, 'pass either lock specs or one options object');
  }
  return { requests: parseLockGroup(args as readonly LockSpec[]) };
}
