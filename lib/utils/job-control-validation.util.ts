import { InvalidLockArgumentError } from '../errors/index.js';
import type { LockJobControl } from '../interfaces/index.js';

/** Longest job name the history holds (`locking_job.job`). */
const MAX_JOB_LENGTH = 200;
/** Longest actor of a control (`locking_job_action.actor`). */
const MAX_ACTOR_LENGTH = 200;
/** Longest reason of a control (`locking_job_action.reason`), as a forced release's. */
export const MAX_CONTROL_REASON_LENGTH = 500;

/**
 * Checks a control of a scheduled job before any database call: a job name of 1–200 characters, an actor of 1–200
 * and a reason of 1–500, neither blank. Returns the actor and reason trimmed.
 * @throws InvalidLockArgumentError
 * @internal
 */
export function assertJobControl(job: unknown, control: unknown): LockJobControl {
  if (typeof job !== 'string' || job.length < 1 || job.length > MAX_JOB_LENGTH) {
    throw new InvalidLockArgumentError('job', job, `a job name of 1-${MAX_JOB_LENGTH} characters`);
  }
  if (typeof control !== 'object' || control === null) {
    throw new InvalidLockArgumentError('control', control, 'an object { actor, reason }');
  }
  const { actor, reason } = control as Partial<Record<keyof LockJobControl, unknown>>;
  const text = (name: string, value: unknown, max: number): string => {
    if (typeof value !== 'string' || value.trim().length === 0 || value.trim().length > max) {
      throw new InvalidLockArgumentError(name, value, `a non-empty text of at most ${max} characters`);
    }
    return value.trim();
  };
  return { actor: text('actor', actor, MAX_ACTOR_LENGTH), reason: text('reason', reason, MAX_CONTROL_REASON_LENGTH) };
}
