/**
 * How a wait resolves an attempt whose answer was lost (a failover, a dropped connection): by its waiter rows, or by
 * taking the grant that landed.
 * @internal
 */
import { LockStoreError } from '../errors/index.js';
import { isTransientStoreFault } from '../store/transient-fault.util.js';
import { bounded, jittered, sleep } from '../utils/wait-timing.util.js';
import type { WaitContext } from './lock-waiter.js';

/**
 * After a failed attempt the next one waits at least this long, doubling with each failure in a row up to the
 * re-check interval (with jitter): when a failover drops every connection at once, the waiters of a fleet do not all
 * try again at once on a pool that is still reconnecting.
 */
export const FIRST_BACKOFF_MS = 50;

/**
 * How long past its deadline a wait goes on looking for the outcome of an attempt whose answer was lost, when the
 * database has not answered by then (it is coming back: a restart, a promotion): the caller is told what happened
 * rather than an error, unless the database stays away this long too.
 */
export const RESOLVE_GRACE_MS = 5000;

/**
 * What an attempt sent at `sentAt` (`Date.now()`) whose answer was lost got: the stamp of the grant it brought (or
 * another orphan of its group, see `takeLostGrant`), or 0 when it granted nothing or nothing that could still be held.
 * Looks until the database answers: past `deadline` by `RESOLVE_GRACE_MS` at most, and never past `sentAt` plus the
 * lease (a grant it may have got is over by then, from this process's side: nobody renewed it, and it ends with its
 * lease). Undefined when `signal` fired first.
 * @throws LockStoreError (`outcomeUnknown`) saying so, when the database did not answer within the grace.
 */
export async function resolveLostAnswer(
  context: WaitContext,
  lost: LockStoreError,
  look: { readonly waiter: string; readonly sentAt: number; readonly rowsTell: boolean },
  deadline: number,
  signal: AbortSignal,
): Promise<number | undefined> {
  const leaseOver = look.sentAt + context.leaseMs;
  const until = Math.min(deadline + RESOLVE_GRACE_MS, leaseOver);
  // Its rows still there: nothing was granted. Gone (or unable to tell): the grant that landed is taken.
  const nothing = look.rowsTell && (await grantedNothing(context, look.waiter, until, signal));
  const taken = nothing ? 0 : await takeLostGrant(context, look.sentAt, until, signal);
  if (signal.aborted) {
    if (taken) await context.store.release(taken).catch(() => undefined);
    return undefined;
  }
  if (taken !== undefined) return taken;
  if (Date.now() >= leaseOver) return 0;
  throw new LockStoreError(
    `tryLocks (a wait whose last attempt lost its answer: the database did not answer within ${RESOLVE_GRACE_MS} ms ` +
      `of the deadline, so whether it was granted is unknown; such a grant is never renewed and ends with its lease)`,
    lost.code,
    true,
    lost.cause,
  );
}

/**
 * Tells whether an attempt whose answer was lost granted nothing, by looking once the database answers again: the
 * waiter's rows are still there (a grant removes them in its own commit). Asks again with back-off until `deadline`;
 * false when it could not tell by then, or the rows are gone (then it may have been granted).
 */
export async function grantedNothing(
  context: WaitContext,
  waiter: string,
  deadline: number,
  signal: AbortSignal,
): Promise<boolean> {
  for (let delay = FIRST_BACKOFF_MS; ; delay = Math.min(delay * 2, context.recheckMs)) {
    await sleep(Math.min(jittered(delay), deadline - Date.now()), signal);
    if (signal.aborted || Date.now() >= deadline) return false;
    try {
      const looked = await bounded(context.store.isWaiting(waiter), deadline, signal);
      if (looked) return looked.value;
    } catch (error) {
      // The database does not answer yet: ask again. A failure that will not pass cannot tell.
      if (!isTransientStoreFault(error)) return false;
    }
  }
}

/**
 * Takes the grant that an attempt sent at `since` may have got although its answer was lost (its waiter rows are gone,
 * or a registration was in flight with it): asks once the database answers, with back-off, until `deadline`. The
 * stamp (0: none landed), or undefined when it could not tell by then (a grant that lands too late is released).
 * @throws LockStoreError that will not pass by itself (see `isTransientStoreFault`), as the database answered it.
 */
export async function takeLostGrant(
  context: WaitContext,
  since: number,
  deadline: number,
  signal: AbortSignal,
): Promise<number | undefined> {
  for (let delay = FIRST_BACKOFF_MS; ; delay = Math.min(delay * 2, context.recheckMs)) {
    if (signal.aborted || Date.now() >= deadline) return undefined;
    const looking = context.resolve(since);
    try {
      const looked = await bounded(looking, deadline, signal);
      if (looked) return looked.value;
      looking.then((late) => late > 0 && context.store.release(late)).catch(() => undefined);
      return undefined;
    } catch (error) {
      // The database does not answer yet: ask again. A failure that will not pass (a privilege revoked) is thrown.
      if (!(error instanceof LockStoreError) || !isTransientStoreFault(error)) throw error;
    }
    await sleep(Math.min(jittered(delay), deadline - Date.now()), signal);
  }
}
