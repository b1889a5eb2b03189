import { type Observable, throwError } from 'rxjs';
import { InvalidLockSpecError } from '../errors/index.js';
import type { LockSpec, LockSpecsFactory, WithLocksOptions } from '../interfaces/index.js';
import { LOCKS_METADATA, SCHEDULER_TYPE_METADATA } from '../lock.constants.js';
import { LockJobs } from '../jobs/lock-jobs.service.js';
import { takeScheduleInvocation } from '../jobs/schedule-invocation.context.js';
import type { LockedCall } from '../services/lock-scope.js';
import { LockServiceHost } from '../services/lock-service.host.js';
import { copyMethodMetadata } from '../utils/copy-method-metadata.util.js';
import { declaresObservable } from '../utils/method-return.util.js';
import { resolveWithLocks } from '../utils/resolve-with-locks-options.util.js';
import { recordWithLocks } from './with-locks.registry.js';

/** Methods `@WithLocks` accepts: the decorated method returns a Promise (or an Observable), so its own must too. */
type LockableMethod = (...args: never[]) => Promise<unknown> | Observable<unknown>;

/**
 * A compile-time check of `@WithLocks`: `unknown` (no constraint) when the method's parameters `P` start with those
 * the lock function declares (`A`), otherwise a type no descriptor has, whose property names the mismatch.
 * @publicApi
 */
export type MatchesLockFunction<P, A extends unknown[]> = P extends [...A, ...unknown[]]
  ? unknown
  : {
      /** Never present: the compiler's message names the parameters the lock function declares. */
      readonly 'the lock function declares parameters that the method does not take': A;
    };

/**
 * The decorator `@WithLocks` returns. `A` is the parameters of the lock function, if any: the decorated method's
 * leading parameters must match them.
 * @publicApi
 */
export type WithLocksDecorator<A extends unknown[] = never[]> = <T extends LockableMethod>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T> & MatchesLockFunction<Parameters<T>, A>,
) => TypedPropertyDescriptor<T>;

/**
 * Takes a group of locks before the method runs and releases it when the method settles (its Promise resolves or
 * rejects), once the nested calls reusing the grant have settled too. A method returning an Observable holds nothing
 * once it has returned it: each subscription takes the group and releases it on complete, error or unsubscribe. A
 * method declared to return an Observable (`design:returntype`) returns one at once, as declared: it is called
 * without taking anything, and its subscriptions are locked.
 * Works on controller handlers, provider methods and `@Cron` / `@Interval` / `@Timeout` jobs, in either order
 * relative to the other decorators.
 *
 * ```ts
 * @Cron('0 * * * * *')
 * @WithLocks('WS2_WRITE', 'WS1_READ')
 * async rebuildWs2(): Promise<void> { … }
 *
 * @Post(':id/repayments')
 * @WithLocks({ locks: (id: number) => [`loan:${id}_WRITE`], transaction: true, retryAfterSeconds: 1 })
 * async repay(@Param('id', ParseIntPipe) id: number, @Body() body: RepaymentDto) { … }
 * ```
 * A function as `locks` (or as the only argument) derives the group from the method's arguments at each call; with
 * `transaction`, the method runs in a fenced transaction (see `WithLocksOptions.transaction`).
 * On a `@Cron` or `@Interval` job, each tick runs once across the fleet: the replica that takes the group claims the
 * tick in the database, the others skip it, and the run history records it (`scheduledRuns: 'per-replica'` runs it
 * on every replica instead). A tick is the schedule's own invocation of the job, whatever decorators sit between
 * `@Cron` and `@WithLocks`; any other call (a direct "run now", a retry from a timer of the application) is no tick:
 * it runs under the group like any other call. When the group is not available: scheduled jobs skip the run (one log line), other methods throw
 * `LockNotAcquiredError` (HTTP 423 through `LockHttpInterceptor`); set `onUnavailable` to choose. Specs are checked
 * when the class is defined: a typo fails at start-up with `InvalidLockSpecError`.
 * @publicApi
 */
export function WithLocks<A extends unknown[]>(locks: LockSpecsFactory<A>): WithLocksDecorator<A>;
export function WithLocks<A extends unknown[] = never[]>(options: WithLocksOptions<A>): WithLocksDecorator<A>;
export function WithLocks(...locks: LockSpec[]): WithLocksDecorator;
export function WithLocks(...args: unknown[]): WithLocksDecorator<unknown[]> {
  const lock = resolveWithLocks(args);
  return <T extends LockableMethod>(target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<T>) => {
    const original = descriptor.value;
    const label = `${target.constructor.name}.${String(propertyKey)}`;
    if (typeof original !== 'function') {
      throw new InvalidLockSpecError(label, '@WithLocks decorates methods only');
    }
    /** Whether the method is declared to return an Observable: read at the first call, once decorators have run. */
    let observable: boolean | undefined;
    // The locked call of one invocation; throws when the call's lock names are invalid.
    const locked = (thisArg: unknown, callArgs: unknown[], job: boolean): LockedCall<unknown> => {
      const scheduled = job || Reflect.getMetadata(SCHEDULER_TYPE_METADATA, wrapped) !== undefined;
      return {
        target: label,
        lock: lock.forCall(callArgs),
        onUnavailable: lock.onUnavailable ?? (scheduled ? 'skip' : 'throw'),
        call: () => Reflect.apply(original, thisArg, callArgs),
      };
    };
    // A Proxy keeps the method's name and length; the service is looked up when the method is called, so nothing
    // depends on module import order or lifecycle-hook order.
    const wrapped = new Proxy(original, {
      apply(method, thisArg, callArgs) {
        // A tick is the schedule's own invocation of this method on this instance (whatever decorators sit between);
        // read before anything else, so that nothing else can take it.
        const invocation = takeScheduleInvocation(thisArg, propertyKey);
        observable ??= declaresObservable(target, propertyKey);
        if (observable && !invocation) {
          // Declared to return an Observable: one at once, locked per subscription (errors are its errors).
          try {
            const service = LockServiceHost.resolve(thisArg, label);
            const job = LockJobs.of(service)?.catalog.jobOf(thisArg, propertyKey) !== undefined;
            return service.lockObservable(locked(thisArg, callArgs, job));
          } catch (error) {
            return throwError(() => error);
          }
        }
        // Always a Promise, also when the lookup fails: callers see a rejection, never a synchronous throw.
        return (async () => {
          const service = LockServiceHost.resolve(thisArg, label);
          const jobs = LockJobs.of(service);
          const job = jobs?.catalog.jobOf(thisArg, propertyKey);
          if (invocation && jobs && job) {
            // A tick: claimed once across the fleet (or once per replica), and recorded in the run history.
            const call = () => Reflect.apply(method, thisArg, callArgs);
            return jobs.runTick(job, lock.forCall(callArgs), call, invocation.firedAt, invocation.request);
          }
          return service.runLocked(locked(thisArg, callArgs, job !== undefined));
        })();
      },
    });
    copyMethodMetadata(original, wrapped);
    Reflect.defineMetadata(LOCKS_METADATA, lock, wrapped);
    recordWithLocks(target, propertyKey, lock);
    descriptor.value = wrapped;
    return descriptor;
  };
}
