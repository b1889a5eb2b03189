import { InvalidLockArgumentError } from '../errors/index.js';
import type { LeaderOptions } from '../interfaces/index.js';
import { lockNameProblem } from '../utils/lock-name.util.js';

/** The prefix of a role's lock name: role `billing` is the lock `leader:billing`. @internal */
export const LEADER_LOCK_PREFIX = 'leader:';

/** The longest `rejoinDelayMs` (the longest Node.js timer). */
const MAX_DELAY_MS = 2_147_483_647;

/** The options of a campaign, defaults applied. @internal */
export interface ResolvedLeaderOptions {
  readonly rejoinDelayMs: number;
}

/**
 * Throws `InvalidLockArgumentError` unless `role` is a role name: a non-empty string that makes a lock name with the
 * prefix `leader:` (at most 193 bytes of UTF-8, no control characters, no trailing space).
 * @internal
 */
export function assertLeaderRole(role: unknown): asserts role is string {
  const problem = typeof role === 'string' && role.length > 0 ? lockNameProblem(LEADER_LOCK_PREFIX + role) : 'empty';
  if (problem !== undefined) {
    throw new InvalidLockArgumentError(
      'role',
      role,
      `a non-empty string of at most ${200 - LEADER_LOCK_PREFIX.length} bytes of UTF-8, without control characters or a trailing space`,
    );
  }
}

/** The lock a role's candidates wait for, and its leader holds. @internal */
export function leaderLockName(role: string): string {
  return LEADER_LOCK_PREFIX + role;
}

/** Validates `LeaderOptions` and applies the defaults; `InvalidLockArgumentError` for a bad value. @internal */
export function resolveLeaderOptions(options: LeaderOptions | undefined): ResolvedLeaderOptions {
  if (options === undefined) return { rejoinDelayMs: 1000 };
  if (options === null || typeof options !== 'object') {
    throw new InvalidLockArgumentError('leader options', options, 'an object such as { rejoinDelayMs: 1000 }');
  }
  const unknown = Object.keys(options).filter((key) => key !== 'rejoinDelayMs');
  if (unknown.length > 0) throw new InvalidLockArgumentError('leader option', unknown[0], 'rejoinDelayMs');
  const { rejoinDelayMs = 1000 } = options;
  if (!Number.isInteger(rejoinDelayMs) || rejoinDelayMs < 0 || rejoinDelayMs > MAX_DELAY_MS) {
    throw new InvalidLockArgumentError('rejoinDelayMs', rejoinDelayMs, `an integer from 0 to ${MAX_DELAY_MS}`);
  }
  return { rejoinDelayMs };
}
