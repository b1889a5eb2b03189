import { LockConfigurationError, LockStoreError } from '../errors/index.js';
import { isRolledBackAtMysqlCommit } from '../store/mysql/mysql-error.util.js';
import { sqlStateOf } from '../store/postgres/pg-error.util.js';

/** The driver's error code, if it has one. @internal */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * True for an error of a COMMIT after which nothing was committed: the server said so. On MySQL and MariaDB a Galera
 * certification failure (1213) or a node out of the primary component (1047); on PostgreSQL SQLSTATE class 40
 * (a serialization failure or a deadlock at COMMIT) or 23 (a deferred constraint). Anything else (a connection lost
 * once the COMMIT was sent) may have committed.
 * @internal
 */
export function isRolledBackAtCommit(error: unknown): boolean {
  if (isRolledBackAtMysqlCommit(error)) return true;
  const state = sqlStateOf(error);
  return state !== undefined && (state.startsWith('40') || state.startsWith('23'));
}

/**
 * The `LockStoreError` of a fenced transaction's failed COMMIT: `outcomeUnknown` unless the server said it rolled
 * back (`isRolledBackAtCommit`: then nothing was written, and the transaction may be run again).
 * @internal
 */
export function commitFailureOf(error: unknown): LockStoreError {
  return new LockStoreError('commit the fenced transaction', codeOf(error), !isRolledBackAtCommit(error), error);
}

/** The reason a fenced commit that failed gives for a grant lost meanwhile. @internal */
export function commitFailureReason(error: unknown): string {
  if (!(error instanceof LockStoreError)) return String(error);
  return error.outcomeUnknown ? `${error.message}; the commit may or may not have been applied` : `${error.message}; rolled back`;
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
  if (fenced) return commitFailureOf(error);
  return error;
}
