import type { LockService } from 'nestjs-db-locks';

/** A grant holding locks now, as `LockService.getGrants()` reports it. */
export type LockGrant = Awaited<ReturnType<LockService['getGrants']>>[number];

/** A row of the lock log, as `LockService.getLog()` reports it. */
export type LockLogEntry = Awaited<ReturnType<LockService['getLog']>>[number];

/** Whether `error` is the library's `LockLostError` (thrown by `markBusinessDone` when the grant is gone). */
export function isLockLostError(error: unknown): error is Error & { readonly stamp: number } {
  return error instanceof Error && error.name === 'LockLostError';
}
