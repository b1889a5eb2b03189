import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { LockStore, type LockListener } from '../store/lock.store.js';

interface Subscriber {
  readonly names: ReadonlySet<string>;
  readonly wake: () => void;
}

/**
 * The one listening connection of this process, shared by all its waiters (opened by the first wait, which awaits
 * it before it registers). A notification wakes the waiters of the freed names; `'*'` wakes every waiter. A lost
 * connection wakes every waiter and, while some waiter remains, is opened again at once; once it listens again every
 * waiter is woken once more (notifications sent in between were missed). Waiters also re-check on a timer, so
 * nothing depends on a notification arriving.
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
    return () => void this.subscribers.delete(subscriber);
  }

  /**
   * Resolves once this process LISTENs (opening the connection when it is not open), or once opening it failed:
   * then waiters fall back to their timer, and the next call tries again.
   */
  async listening(): Promise<void> {
    await this.ensureListening();
  }

  private ensureListening(): Promise<LockListener | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    this.listener ??= this.store
      .listen({
        freed: (names) => this.dispatch(names),
        lost: () => {
          this.logger.warn('The lock listening connection broke; it is opened again, waiters re-check meanwhile');
          this.listener = undefined;
          this.dispatch('*');
          if (this.subscribers.size > 0) void this.ensureListening().then((open) => open && this.dispatch('*'));
        },
      })
      .catch((error: unknown) => {
        if (this.closed) return undefined; // the pool closed under a connection asked for before the shutdown
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

  /**
   * Closes the listening connection. One still being opened (the pool is busy) is not waited for: it is closed when
   * it comes, so that shutdown does not wait for the application's queries.
   */
  onModuleDestroy(): void {
    this.closed = true;
    void this.listener?.then((listener) => listener?.close());
    this.listener = undefined;
  }
}
