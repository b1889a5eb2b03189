import { isObservable } from 'rxjs';
import type { DataSource, QueryRunner } from 'typeorm';
import type { LockTransactionIsolation } from '../interfaces/index.js';
import { InvalidLockSpecError, LockLostError, LockStoreError } from '../errors/index.js';
import { codeOf, commitFailureOf, commitFailureReason } from '../fence/fenced-outcome.util.js';
import { type LockedCall, type LockHolder, type LockScope, logReleaseFailure } from './lock-scope.js';
import { FencedTransaction, type KeptScope, LockTransactionContext } from './lock-transaction.storage.js';

/**
 * Runs a locked call in a fenced transaction, the protocol of a business operation under a lock:
 * 1. the group is already held (`scope`); a transaction is opened on the DataSource;
 * 2. the call runs with the transaction as the chain's (`LockService.currentManager()`);
 * 3. its last statement records "business done" for every grant the transaction relies on (its own, those it reuses,
 *    and those of nested locked calls), which fails with `LockLostError` if any was reaped or its lease expired;
 * 4. commit, then release the grants. From business done to the COMMIT's outcome nobody else can be granted (the
 *    rows business done locked hold off every end of the grants), and the holder's lost signal waits for that
 *    outcome: it never fires for a transaction that committed.
 * Any failure before the commit rolls back, so nothing is written under a lock somebody else may hold now. Releases
 * that fail after the commit (a grant reaped between the commit and the release, the database gone) are logged, not
 * thrown over the result.
 * @internal
 */
export async function runFenced(
  holder: LockHolder,
  locked: LockedCall<unknown>,
  scope: LockScope,
  dataSource: DataSource,
  isolation: LockTransactionIsolation | undefined,
): Promise<unknown> {
  let runner: QueryRunner | undefined;
  let transaction: FencedTransaction | undefined;
  try {
    runner = await begin(dataSource, isolation);
    transaction = new FencedTransaction(dataSource, runner.manager);
    const { value, kept, stamps } = await runInside(holder, locked, scope, transaction);
    await fenceAndCommit(holder, stamps, runner, releasedStamps(scope, kept));
    return value;
  } catch (error) {
    transaction?.end();
    if (runner?.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    await runner?.release().catch(() => undefined);
    // Nested scopes first (the innermost last kept first): the call's own grant waits for their users to leave.
    await releaseAll(locked.target, [...(transaction?.end() ?? [])].reverse().concat(scope));
  }
}

/**
 * Runs the call inside `transaction`, then closes it to nested calls: the call's value, the scopes it kept, and every
 * stamp the commit relies on, each checked still held here (`assertStillHeld`).
 * @internal
 */
export async function runInside(
  holder: LockHolder,
  locked: LockedCall<unknown>,
  scope: LockScope,
  transaction: FencedTransaction,
): Promise<{ value: unknown; kept: readonly KeptScope[]; stamps: number[] }> {
  const value: unknown = await LockTransactionContext.run(holder, transaction, () => scope.run(locked.call));
  if (isObservable(value)) {
    throw new InvalidLockSpecError(locked.target, 'a method with `transaction` must return a Promise, not an Observable');
  }
  const kept = transaction.end();
  const stamps = fencedStamps(scope, kept);
  assertStillHeld(holder, stamps);
  return { value, kept, stamps };
}

/** Opens the transaction; a database that cannot be reached is a `LockStoreError` (nothing was written). */
async function begin(dataSource: DataSource, isolation: LockTransactionIsolation | undefined): Promise<QueryRunner> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.startTransaction(isolation);
    return runner;
  } catch (error) {
    await runner.release().catch(() => undefined);
    throw new LockStoreError('begin the fenced transaction', codeOf(error), false, error);
  }
}

/**
 * Business done, then COMMIT, with the grants' lease expiry waiting for the outcome (`LockLeases.awaitCommit`): the
 * holder gets one outcome. Committed: the grants it releases next are never declared lost, and the caller gets the
 * value. Failed: a grant whose lease ended meanwhile is declared lost with a reason naming the failure, and the
 * caller gets the failure (`LockLostError` from business done, `LockStoreError` with an unknown outcome from COMMIT).
 */
async function fenceAndCommit(
  holder: LockHolder,
  stamps: readonly number[],
  runner: QueryRunner,
  releasing: ReadonlySet<number>,
): Promise<void> {
  holder.awaitCommit(stamps);
  try {
    await holder.fence(stamps, runner.manager);
    await commit(runner);
  } catch (error) {
    holder.commitEnded(stamps, { committed: false, failure: commitFailureReason(error) });
    throw error;
  }
  holder.commitEnded(stamps, { committed: true, releasing });
}

/** The grants the fenced call releases once it has committed: its own, and those of the nested calls it kept. @internal */
export function releasedStamps(scope: LockScope, kept: readonly KeptScope[]): ReadonlySet<number> {
  return new Set([scope, ...kept].flatMap((s) => (s.ownStamp === undefined ? [] : [s.ownStamp])));
}

/**
 * Commits; a failure here leaves the outcome unknown (the COMMIT may have been applied before the failure), unless the
 * server said it rolled back (`commitFailureOf`).
 */
async function commit(runner: QueryRunner): Promise<void> {
  try {
    await runner.commitTransaction();
  } catch (error) {
    throw commitFailureOf(error);
  }
}

/**
 * The holder's side of the fence, checked before business done is sent: a grant whose signal has fired (its lease ran
 * out on this process's clock, or a renewal found it gone) is not committed on, whatever the database still says.
 * Above READ COMMITTED the fence cannot read the lease the renewals keep moving (the snapshot shows an old one), and
 * this check is the lease's: the holder's deadline ends before the database's lease does. From business done on,
 * the rows it locks hold off every end of the grants until the COMMIT's outcome.
 */
function assertStillHeld(holder: LockHolder, stamps: readonly number[]): void {
  const lost = stamps.find((stamp) => !holder.isHeld(stamp));
  if (lost !== undefined) {
    throw new LockLostError(lost, holder.lossReason(lost) ?? 'its lease ended on this process before the commit');
  }
}

/** Every stamp the transaction relies on, once each, in stamp order (the order every fence takes its rows in). */
function fencedStamps(scope: LockScope, kept: readonly KeptScope[]): number[] {
  const stamps = new Set([...scope.stamps, ...kept.flatMap((k) => k.stamps)]);
  return [...stamps].sort((a, b) => a - b);
}

/** Releases nested scopes first, then the call's own; failures are logged. @internal */
export async function releaseAll(target: string, scopes: readonly KeptScope[]): Promise<void> {
  for (const scope of scopes) {
    await scope.close().catch((error: unknown) => logReleaseFailure(target, error));
  }
}
