import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { LockStore, type LockListener } from '../store/lock.store.js';

interface Subscriber {
  readonly names: ReadonlySet<string>;
  readonly wake: () => void;
}

/**
 * The one listening connection of this process, shared by all its waiters (opened on the first wait). A notification
 * wakes the waiters of the freed names; `'*'` and a lost connection wake every waiter (they re-check, and the
 * connection is opened again on the next wait). Waiters also re-check on a timer, so nothing depends on a
 * notification arriving.
 * @internal
 */
@Injectable()
export class LockNotifications implements OnModuleDestroy {
  private readonly logger = new Logger('LockModule');
  private readonly subscribers = new Set<Subscriber>();
  private listener?: Promise<LockListener | undefined>;
  private closed = false;

  constructor(@Inject(LockStore) private readonly store: LockStore) {}

  /** Calls `wake` whenever one of `names` may have been freed; returns the unsubscribe function. */
  subscribe(names: Iterable<string>, wake: () => void): () => void {
    const subscriber: Subscriber = { names: new Set(names), wake };
    this.subscribers.add(subscriber);
    void this.ensureListening();
    return () => void this.subscribers.delete(subscriber);
  }

  private ensureListening(): Promise<LockListener | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    this.listener ??= this.store
      .listen({
        freed: (names) => this.dispatch(names),
        lost: () => {
          this.logger.warn('The lock listening connection broke; waiters fall back to re-checking');
          this.listener = undefined;
          this.dispatch('*');
        },
      })
      .catch((error: unknown) => {
        this.logger.warn(`Cannot listen for freed locks (${(error as Error).message}); waiters re-check on a timer`);
        this.listener = undefined;
        return undefined;
      });
    return this.listener;
  }

  private dispatch(names: readonly string[] | '*'): void {
    for (const subscriber of [...this.subscribers]) {
      if (names === '*' || names.some((name) => subscriber.names.has(name))) subscriber.wake();
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    (await this.listener)?.close();
    this.listener = undefined;
  }
}
