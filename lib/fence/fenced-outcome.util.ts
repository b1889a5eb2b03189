import { LockConfigurationError, LockStoreError } from '../errors/index.js';

/** The driver's error code, if it has one. @internal */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * What the caller of a fenced transaction run by a `LockTransactionRunner` gets for the runner's rejection: the work's
 * own error (the business error, `LockLostError`), or the BEGIN's (`started` false: nothing was written) or COMMIT's
 * (`fenced` true: it may have been applied) as `LockStoreError`.
 * @internal
 */
export function runnerOutcomeOf(error: unknown, started: boolean, fenced: boolean): unknown {
  if (error instanceof LockStoreError || error instanceof LockConfigurationError) return error;
  if (!started) return new LockStoreError('begin the fenced transaction', codeOf(error), false, error);
  if (fenced) return new LockStoreError('commit the fenced transaction', codeOf(error), true, error);
  return error;
}
