import { HOLD_GRANT_ROWS, MARK_BUSINESS_DONE } from './postgres-lock.queries.sql.js';

/**
 * $1 stamp, $2 app id → one row (`fenced`) when the grant is fenced, none when it is lost: the fence of a data layer
 * other than TypeORM (`LockFence`), in one statement. It is MARK_BUSINESS_DONE at READ COMMITTED and HOLD_GRANT_ROWS
 * above it, each statement's condition on the isolation level leaving the other with nothing to do: the same rows
 * locked, and so the same guarantee, as `markBusinessDone` gives in two round trips. The store's own statements stay as they are (the TypeORM
 * path keeps its prepared texts).
 */
export const FENCE = `WITH marked AS (${MARK_BUSINESS_DONE}
  RETURNING 1),
  held AS (${HOLD_GRANT_ROWS})
SELECT 1 AS fenced FROM marked UNION ALL SELECT 1 FROM held WHERE held > 0`;

/** The setting that marks a transaction whose fences must run in it (`MARK_FENCED_TRANSACTION`). */
const MARK = 'nestjs_db_locks.fenced_transaction';

/**
 * $1 stamp, $2 app id → one row: marks the transaction it runs in, until that transaction ends (a setting local to
 * it), as the one the fences of this app id must run in. `LockFence.transaction` and `@WithLocks({ transaction:
 * { runner } })` send it through the runner first, and their fence last (FENCE_IN_MARKED_TRANSACTION): a fence that
 * the runner sends anywhere else (autocommit, the pool, another connection) finds no mark and fences nothing. The
 * statements' clocks cannot tell: a statement sent with parameters starts its transaction at its Parse message and its
 * statement at its Bind, in autocommit too.
 */
export const MARK_FENCED_TRANSACTION = `SELECT set_config('${MARK}', $2, true) AS marked, $1::bigint AS stamp`;

/** The mark of `MARK_FENCED_TRANSACTION`, set by this app id in this very transaction. */
const IN_MARKED_TRANSACTION = `current_setting('${MARK}', true) = $2`;

/** FENCE, only inside the transaction that `MARK_FENCED_TRANSACTION` marked: none when run anywhere else. */
export const FENCE_IN_MARKED_TRANSACTION = `WITH marked AS (${MARK_BUSINESS_DONE} AND ${IN_MARKED_TRANSACTION}
  RETURNING 1),
  held AS (${HOLD_GRANT_ROWS})
SELECT 1 AS fenced FROM marked UNION ALL SELECT 1 FROM held WHERE held > 0 AND ${IN_MARKED_TRANSACTION}`;
