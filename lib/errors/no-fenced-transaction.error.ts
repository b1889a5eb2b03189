import { LockError } from './lock.error.js';

/**
 * `LockService.currentManager()` (or `currentTransaction(runner)`) was called outside a fenced transaction of its
 * kind: not inside a `@WithLocks({ transaction })` method (or the nested calls it awaits), inside one of another
 * kind (a TypeORM transaction, or another runner's), or after that transaction has ended (work the method started but
 * did not await).
 * @publicApi
 */
export class NoFencedTransactionError extends LockError {
  /**
   * @param call the accessor that was called.
   * @param option the `transaction` option that opens the transaction it reads.
   */
  constructor(call = 'currentManager()', option = 'transaction: true') {
    super(
      `${call} needs a fenced transaction: call it inside a method decorated with ` +
        `@WithLocks({ locks, ${option} }), before that method has settled`,
    );
  }
}
