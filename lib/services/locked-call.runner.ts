import { isObservable } from 'rxjs';
import { LockStoreError } from '../errors/index.js';
import { type LockedCall, type LockHolder, logReleaseFailure, openScope } from './lock-scope.js';
import { lockPerSubscription } from './locked-observable.runner.js';

/**
 * Takes the group (minus what the calling chain holds in open grants), runs the call inside the re-entrancy context,
 * and releases the group when the call, and every nested call reusing the grant, has settled. The release is awaited
 * before the result is handed on. A call returning an Observable holds nothing once it has returned: each
 * subscription takes the group for itself (`lockPerSubscription`). The call's own errors pass through unchanged; a
 * release after a successful call that finds the grant gone is logged and thrown, one that cannot reach the database
 * is logged only (it is retried in the background).
 * @internal
 */
export async function runLocked<T>(holder: LockHolder, locked: LockedCall<T>): Promise<unknown> {
  const scope = await openScope(holder, locked);
  if (!scope) return undefined;
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
