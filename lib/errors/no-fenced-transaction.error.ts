import { LockError } from './lock.error.js';

/**
 * `LockService.currentManager()` was called outside a fenced transaction: not inside a
 * `@WithLocks({ transaction })` method (or the nested calls it awaits), or after that transaction has ended (work the
 * method started but did not await).
 * @publicApi
 */
export class NoFencedTransactionError extends LockError {
  constructor() {
    super(
      'currentManager() needs a fenced transaction: call it inside a method decorated with ' +
        '@WithLocks({ locks, transaction: true }), before that method has settled',
    );
  }
}
