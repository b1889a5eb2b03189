import { randomUUID } from 'node:crypto';
import { waiterId } from '../store/lock-rows.util.js';
import { isTransientStoreFault } from '../store/transient-fault.util.js';
import { LockShutdownError, LockStoreError, LockWaitAbortedError } from '../errors/index.js';
import type { LockRequest } from '../interfaces/index.js';
import type { LockStore } from '../store/lock.store.js';
import type { LockNotifications } from './lock-notifications.service.js';
import { FIRST_BACKOFF_MS, resolveLostAnswer } from './lock-wait-outcome.js';
import { bounded, jittered, NEVER } from '../utils/wait-timing.util.js';
import { LockLeases } from './lock-leases.service.js';

/** What a wait needs. @internal */
export interface WaitContext {
  readonly store: LockStore;
  /** One acquisition attempt of the group for `waiter` (it checks the instance lock and records the lease's start). */
  readonly attempt: (waiter: string) => Promise<number>;
  /**
   * Looks for a grant of the group that an attempt sent at `since` (`Date.now()`) may have got although its answer
   * was lost, and hands it over (see `LockOutcomes`); its stamp, or 0 when none landed.
   */
  readonly resolve: (since: number) => Promise<number>;
  readonly notifications: LockNotifications;
  /**
   * The wait took a grant a release handed it: its lease is counted from `refreshSentAt` (`LockLeases.now()`, the
   * send time of the last refresh of the waiter's rows the database answered) for `ttlMs`.
   */
  readonly handedOver: (refreshSentAt: number, ttlMs: number) => void;
  /** Longest sleep between two checks without a notification. */
  readonly recheckMs: number;
  /** How long the waiter's rows count after an attempt (`waiterTtlMs`): the lease of a grant handed over. */
  readonly ttlMs: number;
  /**
   * The lease a grant starts with (`grantLeaseMs`, a leader's `leaseMs`): a grant an attempt may have got is over this
   * long after it was sent.
   */
  readonly leaseMs: number;
  /**
   * Removes the waiter's rows once `after` has settled (its last registration), and never rejects: a removal that
   * fails is made again as soon as the database answers. A grant a release handed the waiter is released, unless it
   * is `keep` (the wait took it).
   */
  readonly cleanUp: (waiter: string, after: Promise<unknown>, keep?: number) => Promise<void>;
}

/**
 * How long the last check of a wait, made at its deadline, may take before the wait gives up on it: a database or a
 * pool slow to answer delays the end of a wait by at most this much.
 */
const LAST_CHECK_MS = 100;

/** How many of a wait's last refused attempts a grant handed over may name (an older one's lease has ended). */
const REFRESHES_KEPT = 8;

/** How long the end of a wait waits for a registration still in flight, to remove its rows. */
const CLEANUP_MS = 1000;

/** The error a stopped wait rejects with: the shutdown's own, or the caller's abort. */
function stopError(signal: AbortSignal): LockWaitAbortedError {
  return signal.reason instanceof LockShutdownError ? signal.reason : new LockWaitAbortedError(signal.reason);
}

/**
 * Waits for a whole group until `deadline` (a `Date.now()` value). In this order, so that no release can slip
 * between the checks unnoticed: the process LISTENs, the waiter registers (its rows give it its place in the order
 * of waiters, and a waiting writer makes the readers behind it yield), then it tries, and tries again on every
 * notification for its names and at least every `recheckMs`. A release that commits before the registration is
 * seen by the first attempt; one that commits after it sees the waiter and notifies.
 *
 * The database may fail for a moment while the waiter waits (a restart, a dropped connection, a failover to a
 * standby, the app id's session being taken back): an attempt or a registration that failed so is made again, with
 * back-off, until the deadline, which then ends the wait as busy (0): a wait ends with a grant, at its deadline, or
 * when `signal` fires, never with a transient store error of a known outcome (`isTransientStoreFault`). A store error
 * that will not pass by itself (a privilege revoked, a setting the server refuses) ends the wait at once with it. An attempt whose answer was lost (its outcome
 * unknown) is resolved by looking (`resolveLostAnswer`): once the database answers again, the waiter's rows still
 * being there prove it granted nothing, and the wait goes on. When the rows cannot tell (they are gone, or a
 * registration was in flight with the attempt), the waiter takes the grant that landed, if one did
 * (`WaitContext.resolve`: a grant of its group taken since by this instance that nobody holds), and otherwise goes on
 * waiting. The look goes on past the deadline for a short grace; only when the database did not answer by then (and
 * a grant it may have made could still be within its lease) does the wait end with a `LockStoreError` saying so: such
 * a grant is never renewed, and ends with its lease.
 *
 * Resolves with the stamp, or 0 at the deadline. When `signal` fires it rejects with `LockWaitAbortedError` (or the
 * `LockShutdownError` that is the signal's reason), also when the attempt in flight at that moment was granted: the
 * grant is released first. Its waiter rows are removed however it ends (`WaitContext.cleanUp`).
 *
 * Every step that needs the database or a pool connection is bounded, whatever the pool is doing: listening and
 * registering are not waited for beyond `recheckMs` (the attempts go on, on the timer), an attempt not beyond the
 * deadline (the last one within `LAST_CHECK_MS` of it), and none once `signal` fires. The wait ends on time, and the
 * step goes on in the background (a grant it brings too late is released, rows it registers are removed when it
 * lands, or expire with their `ttlMs`).
 * @internal
 */
export async function waitForGroup(
  context: WaitContext,
  group: readonly LockRequest[],
  deadline: number,
  signal: AbortSignal,
): Promise<number> {
  const waiter = waiterId(randomUUID(), deadline);
  const { ttlMs } = context;
  let woken = false;
  let wake: () => void = () => undefined;
  /** A grant a release handed this waiter, not taken yet, and the end of the rows it was handed to (epoch ms). */
  let handed: { readonly stamp: number; readonly rowsEndMs: number } | undefined;
  /**
   * The last refused attempts that registered the rows (a store that `registersWaiters`): when each was sent
   * (`LockLeases.now()`) and the rows' end it answered (see HANDED_OVER_LEASE).
   */
  const refreshes: Array<{ readonly sentAt: number; readonly rowsEndMs: number }> = [];
  /** The grant the wait took from a release (its rows stay until the clean-up, which must not release it). */
  let tookHandOver: number | undefined;
  /**
   * When the last refresh of the rows that the database answered was sent (`LockLeases.now()`): a release that hands
   * this waiter a grant ends its lease when the rows then ended, at least `ttlMs` after this (see HANDED_OVER).
   * Before any answer, the first registration's: the rows can be handed over only once it landed.
   */
  let refreshSentAt = -Infinity;
  const unsubscribe = context.notifications.subscribe(
    group.map((r) => r.name),
    () => {
      woken = true;
      wake();
    },
    waiter,
    (stamp, rowsEndMs) => {
      handed ??= { stamp, rowsEndMs };
      woken = true;
      wake();
    },
  );
  /**
   * The stamp the wait takes after an attempt that answered `attempted`: a grant handed over meanwhile, unless the
   * attempt got one itself (it claimed the grant handed over, its lease counted from the attempt; or that grant's
   * short lease had ended and the attempt granted anew). The grant's lease is counted from the attempt that answered
   * the rows' end the hand-over names (HANDED_OVER_LEASE); a grant whose attempt is not among the last ones, or whose
   * lease has ended here already, is left to the next attempt, made at once, which claims it with a lease of its own.
   */
  const takeHandOver = (attempted: number): number => {
    if (handed === undefined) return attempted;
    const { stamp, rowsEndMs } = handed;
    handed = undefined;
    const from = refreshes.find((refresh) => refresh.rowsEndMs === rowsEndMs)?.sentAt ?? refreshSentAt;
    const named = context.store.registersWaiters ? refreshes.some((refresh) => refresh.rowsEndMs === rowsEndMs) : true;
    // Its lease here: the rows' time to live, or the grant's own lease when shorter (as `handedOver` counts it).
    if (attempted > 0) {
      // The attempt claimed it (the same stamp), or found its lease ended and granted anew (the stamp is dead).
      if (attempted !== stamp) void context.store.release(stamp).catch(() => undefined);
      return attempted;
    }
    if (!named || LockLeases.now() >= from + Math.min(ttlMs, context.leaseMs)) {
      // No deadline that comes before the database's can be counted here: the next attempt, at once, claims the grant
      // with a lease counted from itself (or reaps it, if its lease ended, and checks). The rows keep their place.
      woken = true;
      return 0;
    }
    tookHandOver = stamp;
    context.handedOver(from, ttlMs);
    return stamp;
  };
  const onAbort = () => wake();
  signal.addEventListener('abort', onAbort);
  // An attempt the wait gave up on (the pool or the database did not answer in time) goes on in the background; the
  // wait's clean-up is then not awaited either (its waiter rows expire by themselves within `ttlMs`).
  let abandoned = false;
  let registration: Promise<void> | undefined;
  /** A registration is in flight (its rows may land after a grant: they are removed then). */
  let registering = false;
  try {
    // The listening connection comes from the pool: a pool kept busy by the application must not hold the wait up.
    // Without it the waiter re-checks on its timer (the connection is kept when it comes, for the next waits).
    await bounded(context.notifications.listening(), Math.min(deadline, Date.now() + context.recheckMs), signal);
    if (signal.aborted) throw stopError(signal);
    let registeredAt = -Infinity;
    /** Failures in a row, for the back-off before the next attempt. */
    let failures = 0;
    /** Registers (or refreshes) the rows, waiting for the answer at most `waitMs` (and never past the deadline). */
    const register = async (waitMs: number) => {
      registering = true;
      const sentAt = LockLeases.now();
      if (refreshSentAt === -Infinity) refreshSentAt = sentAt;
      const sent = context.store.registerWaiter(waiter, group, ttlMs).then((refreshed) => {
        registeredAt = Date.now();
        // Not refreshed: a release handed the rows a grant, whose lease this refresh did not extend.
        if (refreshed) refreshSentAt = Math.max(refreshSentAt, sentAt);
      });
      void sent.finally(() => (registering = false)).catch(() => undefined);
      // Also when it fails halfway, or is given up on: removing rows that are not there is harmless.
      registration = sent.catch(() => undefined);
      try {
        await bounded(sent, Math.min(deadline, Date.now() + waitMs), signal);
      } catch (error) {
        // Registering again is harmless (it refreshes the rows), so a lost answer is as good as a failure here; a
        // failure that will not pass by itself (a privilege revoked) ends the wait.
        if (!(error instanceof LockStoreError) || !isTransientStoreFault(error)) throw error;
      }
    };
    // A store whose refused attempts register the waiter (one round trip each) needs no registration of its own. The
    // first registration is not waited for past a re-check: on a busy pool the attempts go on meanwhile (the rows
    // count once they land).
    if (!context.store.registersWaiters) await register(context.recheckMs);
    for (;;) {
      woken = false;
      let stamp = 0;
      // Its rows can tell a lost answer apart only when no registration may land after the attempt.
      const rowsTell = registeredAt > -Infinity && !registering;
      const sentAt = Date.now();
      const registers = context.store.registersWaiters && handed === undefined;
      const attemptSentAt = LockLeases.now();
      // Handed a grant while asleep: no attempt (it would only claim that grant, one round trip later).
      const trying = handed === undefined ? context.attempt(waiter) : Promise.resolve(0);
      if (registers) {
        if (refreshSentAt === -Infinity) refreshSentAt = attemptSentAt;
        // Its rows may land with it: the clean-up waits for it.
        registration = trying.then(
          () => undefined,
          () => undefined,
        );
      }
      try {
        let tried = await bounded(trying, Math.max(deadline, Date.now() + LAST_CHECK_MS), signal);
        // Aborted meanwhile: an answer that comes soon is awaited, so that a grant it brings is released below.
        if (!tried && signal.aborted) tried = await bounded(trying, Date.now() + LAST_CHECK_MS, NEVER);
        if (tried) {
          stamp = tried.value;
          failures = 0;
          // Refused, and it registered or refreshed the rows until the end it answers (HANDED_OVER_LEASE).
          if (stamp < 0) {
            registeredAt = Date.now();
            refreshes.push({ sentAt: attemptSentAt, rowsEndMs: -stamp });
            if (refreshes.length > REFRESHES_KEPT) refreshes.shift();
            stamp = 0;
          }
        } else {
          abandoned = true;
          // Nobody is left to use a grant that comes too late; should its release fail, the lease runs out.
          trying.then((late) => late > 0 && context.store.release(late)).catch(() => undefined);
        }
      } catch (error) {
        // Anything but a store error that may pass by itself (the app id taken by a twin: fenced for good; a
        // privilege revoked) ends the wait, at once.
        if (!(error instanceof LockStoreError) || !isTransientStoreFault(error)) throw error;
        failures += 1;
        if (error.outcomeUnknown) {
          const taken = await resolveLostAnswer(context, error, { waiter, sentAt, rowsTell }, deadline, signal);
          if (taken === undefined) throw stopError(signal);
          stamp = taken;
        }
      }
      stamp = takeHandOver(stamp);
      if (signal.aborted) {
        // Nobody is left to use the grant; should the release fail, its lease runs out and the reaper frees it.
        if (stamp > 0) await context.store.release(stamp).catch(() => undefined);
        throw stopError(signal);
      }
      if (stamp > 0) {
        // The granting statement removed the waiter's rows, unless a registration was in flight during the attempt
        // (its answer may come first although its rows landed after the grant). A grant handed over takes its rows
        // with its release; a registration in flight may put rows back after it: the clean-up removes them.
        if ((registers || rowsTell || tookHandOver !== undefined) && !registering) registration = undefined;
        return stamp;
      }
      if (deadline - Date.now() <= 0) return 0;
      if (!context.store.registersWaiters && !registering && Date.now() - registeredAt > ttlMs / 3) {
        // A refresh is waited for, so that no attempt runs alongside it: then the rows can tell what an attempt
        // whose answer was lost did (a refresh landing after a grant would put them back).
        await register(Infinity);
        void context.notifications.listening(); // opens the connection again if it broke and could not be reopened
      }
      const backingOff = failures > 0;
      // A notification that arrived while we were trying means: try again at once (not after a failure, below).
      if (backingOff || (!woken && !signal.aborted)) {
        const pauseMs = backingOff ? jittered(Math.min(FIRST_BACKOFF_MS * 2 ** (failures - 1), context.recheckMs)) : context.recheckMs;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(0, Math.min(deadline - Date.now(), pauseMs)));
          wake = () => {
            // Backing off, only a grant handed to this waiter (it takes it without a statement) or the end of the wait
            // cut the pause short: the other notifications are those of a connection coming and going. The failover
            // test found a waiter woken 2.5 s after its release, in the back-off of failures at the failover.
            if (backingOff && handed === undefined && !signal.aborted) return;
            clearTimeout(timer);
            resolve();
          };
          if (backingOff && (handed !== undefined || signal.aborted)) wake();
        });
        wake = () => undefined;
      }
      if (signal.aborted) throw stopError(signal);
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    unsubscribe();
    // Should this fail (the database is gone), it is made again once the database answers (the rows also expire by
    // themselves within `ttlMs`). A registration still in flight is removed once it has landed.
    const cleanup = registration && context.cleanUp(waiter, registration, tookHandOver);
    if (!abandoned && !registering) await cleanup;
    // A registration whose answer is on its way (its rows landed) is waited for a moment: a shutdown closes the pool
    // right after, and the rows would stay until they expire.
    else if (cleanup && registering) await bounded(cleanup, Date.now() + CLEANUP_MS, NEVER);
  }
}
