import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { LockStore, type LockListener } from '../store/lock.store.js';

interface Subscriber {
  readonly names: ReadonlySet<string>;
  readonly wake: () => void;
}

/** The first pause before the listening connection is opened again after it broke; it doubles up to the longest. */
const FIRST_REOPEN_MS = 50;
const LONGEST_REOPEN_MS = 1000;

/**
 * The one listening connection of this process, shared by all its waiters (opened by the first wait, which awaits
 * it before it registers). A notification wakes the waiters of the freed names; `'*'` wakes every waiter.
 *
 * A lost connection (a failover, a restart, a reset), or one that could not be opened, is opened again on its own,
 * with a pause that doubles (with jitter) up to a second, for as long as some waiter remains: a database that comes
 * back is heard again within about a second, without waiting for a new wait to start. Once it listens again every
 * waiter is woken once (notifications sent in between were missed). The loss itself wakes nobody: the waiters would
 * all retry at once on a pool that is still dying; while deaf they re-check on their timer, so nothing depends on a
 * notification arriving.
 * @internal
 */
@Injectable()
export class LockNotifications implements OnModuleDestroy {
  private readonly logger = new Logger('LockModule');
  private readonly subscribers = new Set<Subscriber>();
  private listener?: Promise<LockListener | undefined>;
  private closed = false;
  /** The connection broke or could not be opened: the waiters are woken once it listens again. */
  private deaf = false;
  private reopening?: NodeJS.Timeout;
  private reopenMs = FIRST_REOPEN_MS;

  constructor(@Inject(LockStore) private readonly store: LockStore) {}

  /** Calls `wake` whenever one of `names` may have been freed; returns the unsubscribe function. */
  subscribe(names: Iterable<string>, wake: () => void): () => void {
    const subscriber: Subscriber = { names: new Set(names), wake };
    this.subscribers.add(subscriber);
    if (this.deaf) this.reopenLater();
    return () => void this.subscribers.delete(subscriber);
  }

  /**
   * Resolves once this process LISTENs (opening the connection when it is not open), or once opening it failed:
   * then waiters fall back to their timer, and it is opened again on its own.
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
          this.deaf = true;
          this.reopenLater();
        },
      })
      .then(
        (listener) => {
          if (this.closed) {
            listener.close();
            return undefined;
          }
          this.reopenMs = FIRST_REOPEN_MS;
          if (this.deaf) {
            this.deaf = false;
            this.dispatch('*');
          }
          return listener;
        },
        (error: unknown) => {
          if (this.closed) return undefined; // the pool closed under a connection asked for before the shutdown
          if (!this.deaf) {
            this.logger.warn(`Cannot listen for freed locks (${(error as Error).message}); waiters re-check on a timer`);
          }
          this.listener = undefined;
          this.deaf = true;
          this.reopenLater();
          return undefined;
        },
      );
    return this.listener;
  }

  /** Opens the connection again after a pause, while some waiter remains (a new wait opens it otherwise). */
  private reopenLater(): void {
    if (this.closed || this.reopening || this.subscribers.size === 0) return;
    const pause = this.reopenMs / 2 + (Math.random() * this.reopenMs) / 2;
    this.reopenMs = Math.min(LONGEST_REOPEN_MS, this.reopenMs * 2);
    this.reopening = setTimeout(() => {
      this.reopening = undefined;
      void this.ensureListening();
    }, pause);
    this.reopening.unref();
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
    clearTimeout(this.reopening);
    // One still being opened is closed when it comes (above).
    void this.listener?.then((listener) => listener?.close());
    this.listener = undefined;
  }
}
