import { FenceOutsideTransactionError, InvalidLockArgumentError } from '../errors/index.js';
import type { LockFenceConnection, LockFenceStatement } from './lock-fence.interface.js';

/** How long a ROLLBACK after a failed fence may take before the connection is destroyed instead. */
const ROLLBACK_WAIT_MS = 5000;

/** What a connection may offer beside `query`: `pg`'s transaction status and end, `mysql2`'s destroy. */
interface ConnectionExtras {
  readonly getTransactionStatus?: () => string | null;
  readonly end?: () => Promise<void> | void;
  readonly destroy?: () => void;
}

/** `connection.query` as a fence executor. @internal */
export function queryOf(connection: LockFenceConnection): (statement: LockFenceStatement) => Promise<unknown> {
  return (statement) => connection.query(statement.sql, [...statement.params]);
}

/**
 * Refuses what cannot hold a transaction: a pool (`pg.Pool`, a mysql2 pool), or mysql2's callback API.
 * @throws InvalidLockArgumentError naming what to give instead.
 * @internal
 */
export function assertTransactionConnection(connection: LockFenceConnection): void {
  const value = connection as unknown as Record<string, unknown> | null;
  if (value === null || typeof value !== 'object' || typeof value.query !== 'function') {
    throw new InvalidLockArgumentError('connection', value, 'a pg client or mysql2/promise connection inside BEGIN');
  }
  if ('totalCount' in value || typeof value.getConnection === 'function') {
    throw new InvalidLockArgumentError(
      'connection',
      'a pool',
      'one connection of it inside BEGIN (pool.connect() / pool.getConnection()): a pool runs each statement on any connection',
    );
  }
  if (typeof value.promise === 'function') {
    throw new InvalidLockArgumentError('connection', 'a mysql2 callback-style connection', 'its promise form (connection.promise())');
  }
}

/**
 * Refuses a `pg` client that is not inside a transaction (its last ready-for-query said idle: no BEGIN, or after the
 * COMMIT), without a round trip. A `pg` client reports it itself; the fence's statement checks it on MariaDB.
 * @throws FenceOutsideTransactionError
 * @internal
 */
export function assertOpenTransaction(connection: LockFenceConnection, stamp: number): void {
  const status = (connection as ConnectionExtras).getTransactionStatus?.();
  if (status === 'I') throw new FenceOutsideTransactionError(stamp, 'the pg client is not inside BEGIN');
}

/**
 * Rolls the connection's transaction back, so that it goes back to its pool with nothing open: a connection whose
 * ROLLBACK fails (or takes longer than `ROLLBACK_WAIT_MS`) is destroyed instead, and its pool replaces it (a `pg`
 * client ended, a `mysql2` connection destroyed). Never throws.
 * @internal
 */
export async function rollBack(connection: LockFenceConnection): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const rolledBack = await Promise.race([
    connection.query('ROLLBACK', []).then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ROLLBACK_WAIT_MS);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  if (!rolledBack) discard(connection);
}

/** Closes the connection for good, so that no later user of its pool can commit what it holds open. */
function discard(connection: LockFenceConnection): void {
  const extras = connection as ConnectionExtras;
  try {
    if (typeof extras.destroy === 'function') extras.destroy();
    else if (typeof extras.end === 'function') void Promise.resolve(extras.end()).catch(() => undefined);
  } catch {
    // Already closed.
  }
}
