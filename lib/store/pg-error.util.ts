import { LockConfigurationError, LockError, LockStoreError, LockTablesMissingError } from '../errors/index.js';

/** SQLSTATEs after which PostgreSQL has rolled the statement back and a retry is safe. */
const TRANSIENT_CODES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57014', // query_canceled (statement_timeout, lock_timeout)
]);

/** Undefined table / function: the migration has not run. */
const MISSING_SCHEMA_CODES = new Set(['42P01', '42883']);

/** @internal */
export function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True when the server rolled back and the same statement may simply be sent again. @internal */
export function isTransientDriverError(error: unknown): boolean {
  const code = sqlStateOf(error);
  return code !== undefined && TRANSIENT_CODES.has(code);
}

/**
 * Turns anything the driver threw into a typed `LockError`: no raw driver error reaches a caller.
 * @param mayHaveCommitted the statement writes and the failure may have come after its commit.
 * @internal
 */
export function toLockError(error: unknown, operation: string, mayHaveCommitted: boolean): LockError {
  if (error instanceof LockError) return error;
  const code = sqlStateOf(error);
  if (code && MISSING_SCHEMA_CODES.has(code)) return new LockTablesMissingError(error);
  if (code === 'LK001') {
    return new LockConfigurationError(
      'nestjs-db-locks needs READ COMMITTED sessions; remove default_transaction_isolation from the lock connections',
      { cause: error },
    );
  }
  // A SQLSTATE of class 08 or 57P0x, or no SQLSTATE at all, means the connection broke: the outcome is unknown.
  const connectionLost = code === undefined || code.startsWith('08') || code.startsWith('57P0');
  return new LockStoreError(operation, code, mayHaveCommitted && connectionLost, error);
}
