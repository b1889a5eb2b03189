import { LockError, LockServerReadOnlyError, LockStoreError, LockTablesMissingError } from '../../errors/index.js';

/** What the `mysql2` driver puts on its errors. */
interface MysqlDriverError {
  readonly code?: unknown;
  readonly errno?: unknown;
  readonly fatal?: unknown;
}

/**
 * Server errors after which the transaction was rolled back, or never ran: the library rolls back and runs the whole
 * transaction again (and a wait or the start-up goes on through them within its budget).
 * - A deadlock, or a row lock not had in time (InnoDB). On a Galera cluster 1213 is also a certification failure: a
 *   transaction of another node wrote the same rows first, and this one was rolled back, at any statement or at its
 *   COMMIT (whose outcome is then known: nothing was written anywhere).
 * - A Galera node that is not ready (1047: joining, desynced, or not in the primary component, e.g. cut off from the
 *   others) refuses every statement that reads or writes tables, COMMIT included; it passes when the node (or the
 *   node a proxy moves to) is back in the cluster.
 */
const TRANSIENT_ERRNOS = new Set([
  1213, // ER_LOCK_DEADLOCK
  1205, // ER_LOCK_WAIT_TIMEOUT
  1047, // ER_UNKNOWN_COM_ERROR: "WSREP has not yet prepared node for application use"
]);

/** Errors at a COMMIT that leave nothing committed (see `TRANSIENT_ERRNOS`). */
const ROLLED_BACK_AT_COMMIT_ERRNOS = new Set([1213, 1047]);

/** No such table: the migrations have not run. */
const MISSING_TABLE_ERRNO = 1146;

/** No such stored procedure (ER_SP_DOES_NOT_EXIST): the migration that creates it has not run. */
const MISSING_PROCEDURE_ERRNO = 1305;

/** No such column (ER_BAD_FIELD_ERROR), in a table of an older migration: the migration that adds it has not run. */
const MISSING_COLUMN_ERRNO = 1054;

/**
 * Server errors that end the session (shutdown, a killed connection), or leave what was sent as uncertain as a lost
 * connection does: a Galera node that leaves the primary component while it replicates a COMMIT answers 1180, and the
 * transaction may still have been certified by the others (the node learns it when it rejoins).
 */
const CONNECTION_ERRNOS = new Set([
  1053, // ER_SERVER_SHUTDOWN
  1927, // ER_CONNECTION_KILLED (MariaDB)
  4031, // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
  1180, // ER_ERROR_DURING_COMMIT: a Galera replication cut short
  // ER_CANT_CHANGE_TX_CHARACTERISTICS: a pooled connection that a transaction was left open on (a COMMIT refused, a
  // business transaction given back unfinished): the library's SET TRANSACTION fails there before anything is sent,
  // and the connection is dropped (which rolls it back) and the statement sent on another.
  1568,
]);

/** The server refuses to write: `read_only` (or `super_read_only`) is set, or the transaction is read-only. */
const READ_ONLY_ERRNOS = new Set([
  1290, // ER_OPTION_PREVENTS_STATEMENT (--read-only)
  1792, // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
  1836, // ER_READ_ONLY_MODE
]);

function driverError(error: unknown): MysqlDriverError {
  return typeof error === 'object' && error !== null ? (error as MysqlDriverError) : {};
}

/** The driver's code: `ER_…` for a server error, the Node.js code (`ECONNRESET`, …) for a socket's. @internal */
export function mysqlCodeOf(error: unknown): string | undefined {
  const { code } = driverError(error);
  return typeof code === 'string' ? code : undefined;
}

/** True for a call of a stored procedure that does not exist: it failed before anything ran. @internal */
export function isMissingMysqlProcedure(error: unknown): boolean {
  return errnoOf(error instanceof LockError ? error.cause : error) === MISSING_PROCEDURE_ERRNO;
}

/** True for a statement that names a column an older migration's table does not have (the newer migration has not run). @internal */
export function isMissingMysqlColumn(error: unknown): boolean {
  return errnoOf(error instanceof LockError ? error.cause : error) === MISSING_COLUMN_ERRNO;
}

function errnoOf(error: unknown): number | undefined {
  const { errno } = driverError(error);
  return typeof errno === 'number' ? errno : undefined;
}

/**
 * True for an error of a COMMIT after which nothing was committed: a Galera certification failure (the transaction
 * conflicted with one certified before it), or a node not in the primary component (refused before anything ran).
 * @internal
 */
export function isRolledBackAtMysqlCommit(error: unknown): boolean {
  const errno = errnoOf(error);
  return errno !== undefined && ROLLED_BACK_AT_COMMIT_ERRNOS.has(errno);
}

/** True when the server rolled back and the transaction may simply be run again. @internal */
export function isTransientMysqlError(error: unknown): boolean {
  const errno = errnoOf(error);
  return errno !== undefined && TRANSIENT_ERRNOS.has(errno);
}

/**
 * True when the failure is the connection's, not the statement's: a socket error, a client-side timeout, a protocol
 * error (the driver marks those `fatal`), the server shutting down or the session killed. Whatever was sent on such a
 * connection may or may not have committed.
 * @internal
 */
export function isMysqlConnectionFailure(error: unknown): boolean {
  if (error instanceof LockError) return false;
  const { fatal } = driverError(error);
  const errno = errnoOf(error);
  if (fatal === true || (errno !== undefined && CONNECTION_ERRNOS.has(errno))) return true;
  // A server error always has an errno; anything else (a socket error, a timeout) is the connection's.
  return errno === undefined || errno < 1000;
}

/**
 * True when the server refused to write (a read-only server: a demoted primary that a proxy still routes to): the
 * connection is destroyed rather than pooled, so that the next one finds the writable primary.
 * @internal
 */
export function isMysqlReadOnlyError(error: unknown): boolean {
  const errno = errnoOf(error instanceof LockServerReadOnlyError ? error.cause : error);
  return errno !== undefined && READ_ONLY_ERRNOS.has(errno);
}

/** The driver-like error of a server found read-only by a check (`why`: what makes it so), errno 1290. @internal */
export function readOnlyMysqlServer(why: string): Error {
  return Object.assign(new Error(`the server may not write (${why}): a replica or a demoted primary`), {
    code: 'ER_OPTION_PREVENTS_STATEMENT',
    errno: 1290,
  });
}

/**
 * Turns anything the driver threw into a typed `LockError`: no raw driver error reaches a caller.
 * @param mayHaveCommitted the transaction's COMMIT was sent: a connection failure then leaves its outcome unknown.
 * @internal
 */
export function toMysqlLockError(error: unknown, operation: string, mayHaveCommitted: boolean): LockError {
  if (error instanceof LockError) return error;
  const errno = errnoOf(error);
  if (errno === MISSING_TABLE_ERRNO || errno === MISSING_PROCEDURE_ERRNO || errno === MISSING_COLUMN_ERRNO) {
    return new LockTablesMissingError(error);
  }
  if (isMysqlReadOnlyError(error)) return new LockServerReadOnlyError(operation, mysqlCodeOf(error), error);
  return new LockStoreError(operation, mysqlCodeOf(error), mayHaveCommitted && isMysqlConnectionFailure(error), error);
}
