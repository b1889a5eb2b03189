import { LockError } from './lock.error.js';

/**
 * The fence of a grant was sent outside the business transaction, so it would have protected nothing: in autocommit (a
 * forgotten `BEGIN`, or after the transaction's `COMMIT`), or on another handle than the transaction's (the pool, `db`
 * instead of `trx`, `this.prisma` instead of `tx`). Nothing was fenced and the fence changed nothing; the grant is
 * still held. Roll the business transaction back (`LockFence.fence`, `fenceAndCommit` and `transaction` do it, or let
 * the error leave your layer's transaction callback), then send the fence through the transaction's own handle.
 * @publicApi
 */
export class FenceOutsideTransactionError extends LockError {
  constructor(
    /** The stamp of the grant whose fence was refused. */
    readonly stamp: number,
    /** What the fence found: autocommit, or a connection not in a transaction. */
    readonly found: string,
  ) {
    super(
      `The fence of stamp ${stamp} ran outside the business transaction (${found}): nothing was fenced. Send it as the ` +
        "last statement inside the open transaction, through the transaction's own handle (trx / tx / the client after " +
        'BEGIN), never the pool or the database object; roll this transaction back',
    );
  }
}
