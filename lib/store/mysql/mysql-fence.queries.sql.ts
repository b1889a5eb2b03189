import { MARK_BUSINESS_DONE } from './mysql-lock.queries.sql.js';

/**
 * ? stamp, ? app id → one row affected when the grant is fenced, none when it is lost or, on MariaDB, the statement
 * runs outside an open transaction (`LockFence` tells the two apart): the fence of a data layer other than TypeORM
 * (`LockFence`). MARK_BUSINESS_DONE, and on MariaDB (the `/*M!` comment is run by MariaDB only) `@@in_transaction`:
 * a fence sent in autocommit (a forgotten BEGIN, a statement after COMMIT, or the pool's or another connection's
 * handle instead of the transaction's) protects nothing, and changes nothing. MySQL has no such variable: there the
 * fence cannot see it.
 */
export const FENCE = `${MARK_BUSINESS_DONE}
    /*M! AND @@in_transaction = 1 */`;
