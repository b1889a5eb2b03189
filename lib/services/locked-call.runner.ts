import { isObservable } from 'rxjs';
import { LockStoreError } from '../errors/index.js';
import { runFenced } from './fenced-transaction.runner.js';
import { runFencedInLayer } from './layer-transaction.runner.js';
import { type LockedCall, type LockHolder, type LockScope, logReleaseFailure, openScope } from './lock-scope.js';
import { type FencedTransaction, LockTransactionContext } from './lock-transaction.storage.js';
import { lockPerSubscription } from './locked-observable.runner.js';

/**
 * Takes the group (minus what the calling chain holds in open grants), runs the call inside the re-entrancy context,
 * and releases the group when the call, and every nested call reusing the grant, has settled. The release is awaited
 * before the result is handed on. A call returning an Observable holds nothing once it has returned: each
 * subscription takes the group for itself (`lockPerSubscription`). The call's own errors pass through unchanged; a
 * release after a successful call that finds the grant gone is logged and thrown, one that cannot reach the database
 * is logged only (it is retried in the background).
 *
 * Inside a fenced transaction of the chain, the call joins it: its grant is kept until the transaction ends, and
 * fenced with it. A call that asks for a transaction on another DataSource or runner opens its own (`runFenced`,
 * `runFencedInLayer`).
 * @internal
 */
export async function runLocked<T>(holder: LockHolder, locked: LockedCall<T>): Promise<unknown> {
  const { transaction } = locked.lock;
  // Resolved before anything is taken: an unknown DataSource name or runner fails the call with nothing held.
  const runner = transaction?.runner === undefined ? undefined : holder.transactionRunner(locked.target, transaction);
  const dataSource = transaction && !runner ? holder.dataSource(transaction.dataSource) : undefined;
  const source = runner ?? dataSource;
  const scope = await openScope(holder, locked);
  if (!scope) return undefined;
  const open = LockTransactionContext.current(holder);
  if (open && (source === undefined || source === open.source)) return runJoined(locked, scope, open);
  if (runner) return runFencedInLayer(holder, locked, scope, runner, transaction?.isolation);
  if (dataSource) return runFenced(holder, locked, scope, dataSource, transaction?.isolation);
  let result: unknown;
  try {
    result = await scope.run(() => {
      const value = locked.call();
      return isObservable(value) ? value : Promise.resolve(value);
    });
  } catch (error) {
    await scope.close().catch((releaseError: unknown) => logReleaseFailure(locked.target, releaseError));
    throw error;
  }
  try {
    await scope.close();
  } catch (releaseError) {
    logReleaseFailure(locked.target, releaseError);
    // The database could not be reached: the release is retried in the background (and the lease ends anyway), so
    // the call's result stands. A grant found gone (lost while the call ran) is the caller's to know.
    if (!(releaseError instanceof LockStoreError)) throw releaseError;
  }
  return isObservable(result) ? lockPerSubscription(holder, locked, result) : result;
}

/** Runs the call in the chain's open fenced transaction (any call, unless it asks for another DataSource or runner); its scope is released when the transaction ends, not before. */
async function runJoined(locked: LockedCall<unknown>, scope: LockScope, transaction: FencedTransaction): Promise<unknown> {
  const settle = async () => {
    if (!transaction.keep(scope)) await scope.close();
  };
  let result: unknown;
  try {
    result = await scope.run(() => Promise.resolve(locked.call()));
  } catch (error) {
    await settle().catch((releaseError: unknown) => logReleaseFailure(locked.target, releaseError));
    throw error;
  }
  await settle();
  return result;
}
