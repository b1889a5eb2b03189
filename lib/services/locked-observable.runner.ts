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
 * A subscription holding the group is a holder the shutdown waits for (`LockedCallsTracker.hold`): when
 * `shutdownGraceMs` ends before it does, it is unsubscribed from `source`, releases the group, then errors with
 * `LockShutdownError`.
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
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    const closeThen = (forward: () => void) =>
      void scope!.close().then(
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

    openScope(holder, locked, unsubscribed.signal).then(
      (opened) => {
        if (!opened) return subscriber.complete();
        scope = opened;
        holder.hold(
          {
            description: `A subscription of ${locked.target}`,
            stopping: () => undefined, // an Observable has no channel for it: the grace period is its notice
            end: () => {
              inner?.unsubscribe();
              closeThen(() => subscriber.error(new LockShutdownError()));
              return ended;
            },
          },
          ended,
        );
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
        if (!subscriber.closed) subscriber.error(error);
      },
    );
    return () => {
      unsubscribed.abort(); // ends a wait for the group, if one is under way
      inner?.unsubscribe();
      if (scope) closeThen(() => undefined);
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
