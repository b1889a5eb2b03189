import { HOLD_GRANT_ROWS, MARK_BUSINESS_DONE } from './postgres-lock.queries.sql.js';

/**
 * $1 stamp, $2 app id → one row (`fenced`) when the grant is fenced, none when it is lost: the fence of a data layer
 * other than TypeORM (`LockFence`), in one statement. It is MARK_BUSINESS_DONE at READ COMMITTED and HOLD_GRANT_ROWS
 * above it, each statement's condition on the isolation level leaving the other with nothing to do: the same rows
 * locked, and so the same guarantee, as `markBusinessDone` gives in two round trips. The store's own statements stay
 * as they are (the TypeORM path keeps its prepared texts).
 */
export const FENCE = `WITH marked AS (${MARK_BUSINESS_DONE}
  RETURNING 1),
  held AS (${HOLD_GRANT_ROWS})
SELECT 1 AS fenced FROM marked UNION ALL SELECT 1 FROM held WHERE held > 0`;
