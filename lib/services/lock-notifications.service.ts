import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { LockStore, type LockListener } from '../store/lock.store.js';
import { jittered } from '../utils/wait-timing.util.js';

/** First pause before the listening connection is opened again after it broke or could not be opened; it doubles. */
const REOPEN_FIRST_MS = 100;
/** Longest pause between two tries to open the listening connection again (each pause is jittered). */
const REOPEN_MAX_MS = 2_000;

/** An outage of the listening connection: since when, and how many tries to open it again failed. */
interface Outage {
  readonly since: number;
  attempts: number;
}

interface Subscriber {
  readonly names: ReadonlySet<string>;
  readonly wake: () => void;
}

/** A grant a release handed to a waiter of this process (`ListenerCallbacks.handedOver`). */
export type HandOverCallback = (stamp: number, rowsEndMs: number) => void;

/**
 * The one listening connection of this process, shared by all its waiters (opened by the first wait, which awaits
 * it before it registers). A notification wakes the waiters of the freed names; `'*'` wakes every waiter. A lost
 * connection wakes every waiter and, while some waiter remains, is opened again with capped, jittered exponential
 * back-off (100 ms doubling up to 2 s, each pause scaled by [0.5, 1)) while the database does not answer (a restart,
 * a failover): a handful of tries per outage, not a storm, without waiting for a new wait to ask. An outage is
 * logged once when it begins and once when it is over (how long, how many tries). Once it listens again every waiter
 * is woken once more (notifications sent in between were missed). Waiters also re-check on a timer, so nothing
 * depends on a notification arriving.
 * @internal
 */
@Injectable()
export class LockNotifications implements OnModuleDestroy {
  private readonly logger = new Logger('LockModule');
  private readonly subscribers = new Set<Subscriber>();
  /** The waits of this process that can be handed a grant, by waiter id. */
  private readonly handOvers = new Map<string, HandOverCallback>();
  private listener?: Promise<LockListener | undefined>;
  private closed = false;
  private reopenTimer?: NodeJS.Timeout;
  private reopenDelayMs = REOPEN_FIRST_MS;
  private outage?: Outage;

  constructor(@Inject(LockStore) private readonly store: LockStore) {}

  /**
   * Calls `wake` whenever one of `names` may have been freed, and `handedOver` when a release handed the waiter
   * `waiter` a grant; returns the unsubscribe function. A hand-over for a waiter no longer subscribed is ignored: its
   * clean-up (`LockStore.unregisterWaiter`) finds the grant and releases it.
   */
  subscribe(names: Iterable<string>, wake: () => void, waiter?: string, handedOver?: HandOverCallback): () => void {
    const subscriber: Subscriber = { names: new Set(names), wake };
    this.subscribers.add(subscriber);
    if (waiter !== undefined && handedOver) this.handOvers.set(waiter, handedOver);
    return () => {
      this.subscribers.delete(subscriber);
      if (waiter !== undefined && this.handOvers.get(waiter) === handedOver) this.handOvers.delete(waiter);
    };
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
        handedOver: (waiter, stamp, rowsEndMs) => this.handOvers.get(waiter)?.(stamp, rowsEndMs),
        lost: () => {
          this.listener = undefined;
          this.beginOutage('The lock listening connection broke');
          this.dispatch('*');
          this.reopenLater();
        },
      })
      .then((listener) => {
        this.endOutage();
        return listener;
      })
      .catch((error: unknown) => {
        if (this.closed) return undefined; // the pool closed under a connection asked for before the shutdown
        this.listener = undefined;
        if (this.outage) this.outage.attempts++;
        else this.beginOutage(`Cannot listen for freed locks (${(error as Error).message})`).attempts++;
        this.reopenLater();
        return undefined;
      });
    return this.listener;
  }

  /** Logs the start of an outage, once: later failures of the same outage only count. */
  private beginOutage(what: string): Outage {
    if (!this.outage) {
      this.outage = { since: performance.now(), attempts: 0 };
      this.logger.warn(`${what}; reconnecting with back-off, waiters re-check on their timer meanwhile`);
    }
    return this.outage;
  }

  /** Logs the end of an outage, once, and starts the next back-off afresh. */
  private endOutage(): void {
    this.reopenDelayMs = REOPEN_FIRST_MS;
    const outage = this.outage;
    if (!outage) return;
    this.outage = undefined;
    const seconds = ((performance.now() - outage.since) / 1000).toFixed(1);
    this.logger.log(`The lock listening connection is back after ${seconds} s, ${outage.attempts + 1} attempt(s)`);
  }

  /** Schedules the next try after a jittered pause, doubling the next one up to `REOPEN_MAX_MS`. */
  private reopenLater(): void {
    this.reopen(jittered(this.reopenDelayMs));
    this.reopenDelayMs = Math.min(this.reopenDelayMs * 2, REOPEN_MAX_MS);
  }

  /**
   * Opens the listening connection again after `delayMs`, while some waiter remains, and wakes every waiter once it
   * listens (notifications sent meanwhile were missed). A failure schedules the next try.
   */
  private reopen(delayMs: number): void {
    if (this.closed || this.reopenTimer || this.subscribers.size === 0) return;
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined;
      if (this.closed || this.subscribers.size === 0) return;
      void this.ensureListening().then((open) => open && this.dispatch('*'));
    }, delayMs);
    this.reopenTimer.unref();
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
    clearTimeout(this.reopenTimer);
    void this.listener?.then((listener) => listener?.close());
    this.listener = undefined;
  }
}
