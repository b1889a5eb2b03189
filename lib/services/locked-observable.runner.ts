import { isObservable, Observable, type Subscription, throwError } from 'rxjs';
import { InvalidLockSpecError, LockShutdownError } from '../errors/index.js';
import { type LockedCall, type LockHolder, type LockScope, logReleaseFailure, openScope } from './lock-scope.js';

/**
 * The Observable a locked method returned, locked per subscription: each subscription takes the group (re-entrant
 * through the subscriber's own chain, waiting up to `waitMs`) before it subscribes to `source`, and releases it when
 * `source` completes or errors (then forwards that, after the release) or when the subscriber unsubscribes. An
 * Observable that is never subscribed holds nothing. When the group is not available the subscription errors with
 * `LockNotAcquiredError`, or, with `onUnavailable: 'skip'`, completes without values.
 *
 * Each subscription is a holder the shutdown waits for (`LockedCallsTracker.hold`), from its start (its group may be
 * granted just as shutdown begins) until it has released: when `shutdownGraceMs` ends before that, it is unsubscribed
 * from `source`, releases the group, then errors with `LockShutdownError`.
 * @internal
 */
export function lockPerSubscription(
  holder: LockHolder,
  locked: LockedCall<unknown>,
  source: Observable<unknown>,
): Observable<unknown> {
  return new Observable((subscriber) => {
    const unsubscribed = new AbortController();
    let scope: LockScope | undefined;
    let inner: Subscription | undefined;
    /** The shutdown ended it: its subscriber gets `LockShutdownError`, once nothing is held. */
    let endedByShutdown = false;
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    const closeThen = (forward: () => void) => {
      if (!scope) return;
      void scope.close().then(
        () => {
          markEnded();
          forward();
        },
        (releaseError: unknown) => {
          logReleaseFailure(locked.target, releaseError);
          markEnded();
          forward();
        },
      );
    };
    const shutdownError = () => subscriber.error(new LockShutdownError());

    // A holder from the start: a subscription whose group is granted just as shutdown begins is waited for too.
    holder.hold(
      {
        description: `A subscription of ${locked.target}`,
        stopping: () => undefined, // an Observable has no channel for it: the grace period is its notice
        end: () => {
          endedByShutdown = true;
          unsubscribed.abort(); // a wait for the group ends (with nothing held)
          inner?.unsubscribe();
          closeThen(shutdownError);
          return ended;
        },
      },
      ended,
    );
    openScope(holder, locked, unsubscribed.signal).then(
      (opened) => {
        if (!opened) {
          markEnded();
          return subscriber.complete();
        }
        scope = opened;
        if (endedByShutdown) return closeThen(shutdownError);
        if (subscriber.closed) return closeThen(() => undefined);
        inner = opened.run(() =>
          source.subscribe({
            next: (value) => subscriber.next(value),
            error: (error: unknown) => closeThen(() => subscriber.error(error)),
            complete: () => closeThen(() => subscriber.complete()),
          }),
        );
      },
      (error: unknown) => {
        markEnded();
        if (endedByShutdown) shutdownError();
        else if (!subscriber.closed) subscriber.error(error);
      },
    );
    return () => {
      unsubscribed.abort(); // ends a wait for the group, if one is under way
      inner?.unsubscribe();
      closeThen(() => undefined);
    };
  });
}

/**
 * A call of a method declared to return an Observable, made at once and without taking anything (building an
 * Observable does no work): what it returns is locked per subscription (`lockPerSubscription`). Its synchronous throw
 * becomes the Observable's error, as a Promise-returning call's becomes a rejection.
 * @internal
 */
export function lockDeclaredObservable(holder: LockHolder, locked: LockedCall<unknown>): Observable<unknown> {
  if (locked.lock.transaction) {
    return throwError(
      () => new InvalidLockSpecError(locked.target, 'a method with `transaction` must return a Promise, not an Observable'),
    );
  }
  let source: unknown;
  try {
    source = locked.call();
  } catch (error) {
    return throwError(() => error);
  }
  if (!isObservable(source)) {
    return throwError(
      () =>
        new InvalidLockSpecError(
          locked.target,
          'it is declared to return an Observable but returned something else, which ran without the locks',
        ),
    );
  }
  return lockPerSubscription(holder, locked, source);
}
