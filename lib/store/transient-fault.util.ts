import { LockServerReadOnlyError, LockStoreError } from '../errors/index.js';
import { isMysqlConnectionFailure, isTransientMysqlError } from './mysql/mysql-error.util.js';
import { isConnectionFailure, isTransientDriverError, sqlStateOf } from './postgres/pg-error.util.js';

/** PostgreSQL: too many connections (a restart's crowd of reconnecting clients), out of resources for a moment. */
const BUSY_SQLSTATES = new Set(['53300', '53400']);

/** MySQL/MariaDB: too many connections (ER_CON_COUNT_ERROR), too many for this user (ER_TOO_MANY_USER_CONNECTIONS). */
const BUSY_ERRNOS = new Set([1040, 1203]);

/**
 * True for a failure that the same call may overcome by itself a moment later, on either dialect: the connection
 * could not be had or broke (a restart, a failover, a terminated backend: 08xxx, 57P01–57P03, `ECONNREFUSED`,
 * `ECONNRESET`, a timeout, MySQL's server shutdown or killed connection), the server is busy or read-only for now
 * (a demoted primary), or a deadlock or serialisation failure. A configuration error (missing tables, a bad setting,
 * a twin holding the app id) is not one.
 * @internal
 */
export function isTransientStoreFault(error: unknown): boolean {
  if (error instanceof LockServerReadOnlyError) return true;
  if (!(error instanceof LockStoreError)) return false;
  const cause = error.cause;
  const errno = (cause as { errno?: unknown } | null)?.errno;
  // A MySQL server error carries its errno (>= 1000); a socket error carries Node's negative errno, a pg error none.
  if (typeof errno === 'number' && errno >= 1000) {
    return isMysqlConnectionFailure(cause) || isTransientMysqlError(cause) || BUSY_ERRNOS.has(errno);
  }
  const code = sqlStateOf(cause);
  return isConnectionFailure(cause) || isTransientDriverError(cause) || (code !== undefined && BUSY_SQLSTATES.has(code));
}
