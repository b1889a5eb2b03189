import {
  LockConfigurationError,
  LockError,
  LockServerReadOnlyError,
  LockStoreError,
  LockTablesMissingError,
} from '../../errors/index.js';

/** SQLSTATEs after which PostgreSQL has rolled the statement back and a retry is safe. */
const TRANSIENT_CODES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57014', // query_canceled (statement_timeout, lock_timeout)
]);

/** Undefined table / function / column (a table of an older migration): the migration has not run. */
const MISSING_SCHEMA_CODES = new Set(['42P01', '42883', '42703']);

/** read_only_sql_transaction: the server is a standby, or `default_transaction_read_only` is on. */
const READ_ONLY_CODE = '25006';

/** A SQLSTATE: five digits or capitals. No SQLSTATE class starts with E, so Node's `EPIPE` is not one. */
const SQLSTATE = /^[0-9A-DF-Z][0-9A-Z]{4}$/;

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
 * True when the failure is the connection's, not the statement's: a socket error (`ECONNRESET`, `EPIPE`,
 * `ETIMEDOUT`, …), a client-side timeout or an ended connection (no code at all), SQLSTATE class 08 (connection
 * exception) or 57P0x (the server is shutting down, crashed, or terminated the backend). Whatever was sent on such a
 * connection may or may not have committed.
 * @internal
 */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof LockError) return false;
  const code = sqlStateOf(error);
  if (code === undefined || !SQLSTATE.test(code)) return true;
  return code.startsWith('08') || code.startsWith('57P0');
}

/**
 * True when the server refused to write (25006): a connection that reached a read-only server (a demoted primary that
 * a proxy still routes to) is destroyed rather than pooled, so that the next one finds the writable primary.
 * @internal
 */
export function isReadOnlyServerError(error: unknown): boolean {
  return sqlStateOf(error instanceof LockServerReadOnlyError ? error.cause : error) === READ_ONLY_CODE;
}

/** The driver-like error of a server found read-only by a check (`why`: what makes it so), with code 25006. @internal */
export function readOnlyServer(why: string): Error {
  return Object.assign(new Error(`the server may not write (${why}): a standby or a demoted primary`), { code: READ_ONLY_CODE });
}

/**
 * Turns anything the driver threw into a typed `LockError`: no raw driver error reaches a caller.
 * @param mayHaveCommitted the statement was sent and writes: a connection failure then leaves its outcome unknown.
 * @internal
 */
export function toLockError(error: unknown, operation: string, mayHaveCommitted: boolean): LockError {
  if (error instanceof LockError) return error;
  const code = sqlStateOf(error);
  if (code && MISSING_SCHEMA_CODES.has(code)) return new LockTablesMissingError(error);
  if (code === READ_ONLY_CODE) return new LockServerReadOnlyError(operation, code, error);
  if (code === 'LK001') {
    return new LockConfigurationError(
      'nestjs-db-locks needs READ COMMITTED sessions; remove default_transaction_isolation from the lock connections',
      { cause: error },
    );
  }
  return new LockStoreError(operation, code, mayHaveCommitted && isConnectionFailure(error), error);
}

/**
 * True for the 40001 of a row lock taken at REPEATABLE READ or SERIALIZABLE on a row that a transaction committed
 * after the snapshot deleted or updated ("could not serialize access due to concurrent delete"): raised by the
 * executor's row-locking step (`ExecLockRows`), unlike the failures of serializable snapshot isolation, which are about
 * the caller's own reads and writes.
 * @internal
 */
export function isRowChangedSinceSnapshot(error: unknown): boolean {
  const routine = (error as { routine?: unknown } | null)?.routine;
  return sqlStateOf(error) === '40001' && routine === 'ExecLockRows';
}
