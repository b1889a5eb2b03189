import { LockConfigurationError } from '../errors/index.js';
import type { LockTransactionIsolation, LockTransactionRunner } from '../interfaces/index.js';
import { commitFailureReason, runnerOutcomeOf } from '../fence/fenced-outcome.util.js';
import { releaseAll, releasedStamps, runInside } from './fenced-transaction.runner.js';
import type { LockedCall, LockHolder, LockScope } from './lock-scope.js';
import { FencedTransaction } from './lock-transaction.storage.js';

/**
 * `runFenced` in a transaction of the application's own data layer (`@WithLocks({ transaction: { runner } })`): the
 * runner opens the transaction and hands its object to the call (`LockService.currentTransaction`); when the call
 * resolves, business done of every grant the transaction relies on is sent through the runner as its last statement
 * (`LockLostError` if one is lost: the work rejects and the runner rolls back); the runner commits, and the grants
 * are released once its Promise has settled. From business done to that outcome the grants' lease expiry waits
 * (`awaitCommit`), so a transaction that committed is never told lost. A runner that rejects after business done is
 * a COMMIT that failed: `LockStoreError` with an unknown outcome; one that rejects before its work started is a
 * BEGIN that failed: `LockStoreError`, nothing written.
 * @internal
 */
export async function runFencedInLayer(
  holder: LockHolder,
  locked: LockedCall<unknown>,
  scope: LockScope,
  runner: LockTransactionRunner,
  isolation: LockTransactionIsolation | undefined,
): Promise<unknown> {
  let transaction: FencedTransaction | undefined;
  let stamps: readonly number[] | undefined;
  let fenced = false;
  try {
    const value = await runner.run(async (tx) => {
      transaction = new FencedTransaction(runner, undefined, tx);
      await holder.markInLayer(runner, tx, scope.stamps[0] ?? 0);
      const { value: result, stamps: relied } = await runInside(holder, locked, scope, transaction);
      holder.awaitCommit(relied);
      stamps = relied;
      await holder.fenceInLayer(runner, tx, relied);
      fenced = true;
      return result;
    }, isolation === undefined ? {} : { isolation });
    if (!stamps || !fenced) {
      throw new LockConfigurationError(
        `@WithLocks ${locked.target}: transaction.runner resolved before the method and its fence had run in its ` +
          'transaction: its run(work) must return (or await) work(tx)',
      );
    }
    holder.commitEnded(stamps, { committed: true, releasing: releasedStamps(scope, transaction?.end() ?? []) });
    return value;
  } catch (error) {
    const failure = runnerOutcomeOf(error, transaction !== undefined, fenced);
    if (stamps) {
      holder.commitEnded(stamps, { committed: false, failure: commitFailureReason(failure) });
    }
    throw failure;
  } finally {
    // Nested scopes first (the innermost last kept first): the call's own grant waits for their users to leave.
    await releaseAll(locked.target, [...(transaction?.end() ?? [])].reverse().concat(scope));
  }
}
