import { Observable, type Subscription } from 'rxjs';
import { type LockedCall, type LockHolder, type LockScope, logReleaseFailure, openScope } from './lock-scope.js';

/**
 * The Observable a locked method returned, locked per subscription: each subscription takes the group (re-entrant
 * through the subscriber's own chain, waiting up to `waitMs`) before it subscribes to `source`, and releases it when
 * `source` completes or errors (then forwards that, after the release) or when the subscriber unsubscribes. An
 * Observable that is never subscribed holds nothing. When the group is not available the subscription errors with
 * `LockNotAcquiredError`, or, with `onUnavailable: 'skip'`, completes without values.
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
    const closeThen = (forward: () => void) =>
      void scope!.close().then(forward, (releaseError: unknown) => {
        logReleaseFailure(locked.target, releaseError);
        forward();
      });

    openScope(holder, locked, unsubscribed.signal).then(
      (opened) => {
        if (!opened) return subscriber.complete();
        scope = opened;
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
