import type { Logger } from '@nestjs/common';
import { LockShutdownError } from '../errors/index.js';

/**
 * Whether a scheduled run's error is a lock refused because the application is stopping (`LockShutdownError`, from
 * any lock call the run made): not a failure of the job, so it is logged as one debug line, never as an error.
 * @internal
 */
export function isShutdownRefusal(error: unknown): error is LockShutdownError {
  return error instanceof LockShutdownError;
}

/**
 * `method`, resolving with undefined (and one debug line naming `label`) instead of rejecting when it rejects because a
 * lock it asked for was refused as the application stops; any other outcome (its value, its own error) is unchanged.
 * The schedule module logs what a job's callback rejects with as an error with its stack: a deploy must not look like
 * a crash. Not a function: returned as it is.
 * @internal
 */
export function quietShutdownRefusals(method: unknown, label: string, logger: Logger): unknown {
  if (typeof method !== 'function') return method;
  const call = method as (...args: unknown[]) => unknown;
  return async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    try {
      return await call.apply(this, args);
    } catch (error) {
      if (!isShutdownRefusal(error)) throw error;
      logger.debug(`A run of ${label} ended early: a lock it asked for was refused because the application is shutting down`);
      return undefined;
    }
  };
}
