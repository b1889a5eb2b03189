import { LockModuleNotInitializedError } from '../errors/index.js';
import type { LockService } from './lock.service.js';

/**
 * How a `@WithLocks` method finds its `LockService` at call time, without dependency injection (so it works on
 * controllers, providers built by factories, cron jobs and plain classes alike; the nestjs-cls `TransactionHost`
 * pattern). The explorer binds each discovered instance to the `LockService` of its own application, so several
 * applications in one process stay apart; anything else uses the most recently initialised service.
 * @internal
 */
export class LockServiceHost {
  private static readonly bound = new WeakMap<object, LockService>();
  private static readonly initialised: LockService[] = [];

  /** Called when a `LockService` has finished its start-up. */
  static register(service: LockService): void {
    this.initialised.push(service);
  }

  /** Called when its application shuts down. */
  static unregister(service: LockService): void {
    const index = this.initialised.indexOf(service);
    if (index >= 0) this.initialised.splice(index, 1);
  }

  /** Binds an instance with decorated methods to its application's service. */
  static bind(instance: object, service: LockService): void {
    this.bound.set(instance, service);
  }

  /** The service for a call on `instance`; throws when none is initialised. */
  static resolve(instance: unknown, target: string): LockService {
    const bound = typeof instance === 'object' && instance !== null ? this.bound.get(instance) : undefined;
    const service = bound && this.initialised.includes(bound) ? bound : this.initialised.at(-1);
    if (!service) throw new LockModuleNotInitializedError(target);
    return service;
  }
}
