import { LockError } from './lock.error.js';

/**
 * The reason of a leader's signal when its term ends by this replica's own choice: its leader method returned or threw
 * (`why: 'work-ended'`), or `LeaderService.resign(role)` was called (`why: 'resigned'`). A lost grant fires the signal
 * with a `LockLostError`, a shutdown with a `LockShutdownError`.
 * @publicApi
 */
export class LeadershipEndedError extends LockError {
  constructor(
    /** The role. */
    readonly role: string,
    /** How the term ended. */
    readonly why: 'work-ended' | 'resigned',
  ) {
    super(`The leadership of role ${role} ended: ${why === 'resigned' ? 'resign() was called' : 'its leader method ended'}`);
  }
}
