import { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource, EntityManager } from 'typeorm';
import type { LockTransactionRunner } from '../interfaces/index.js';

/** What a fenced transaction waits for before it releases them: the scopes of nested locked calls. @internal */
export interface KeptScope {
  /** The stamps the scope relies on (its own grant and those it reuses). */
  readonly stamps: readonly number[];
  /** The stamp of the scope's own grant, which `close` releases (undefined when it only reuses grants). */
  readonly ownStamp: number | undefined;
  /** Releases the scope's own grant. */
  close(): Promise<void>;
}

/**
 * A fenced transaction opened by a `@WithLocks({ transaction })` call: where it was opened (a TypeORM DataSource, or a
 * `LockTransactionRunner` of the application's data layer), its transaction object (an `EntityManager`, or the
 * runner's), and the grants taken by nested locked calls while it is open. Those are kept until it ends (two-phase locking): a nested call's writes
 * belong to this transaction, so its locks must outlive the commit and be fenced with it. @internal
 */
export class FencedTransaction {
  private ended = false;
  private readonly kept: KeptScope[] = [];

  constructor(
    /** The DataSource or the runner that opened it: a nested call asking for the same one joins it. */
    readonly source: DataSource | LockTransactionRunner,
    /** The `EntityManager` of a TypeORM transaction; undefined in a runner's. */
    readonly manager: EntityManager | undefined,
    /** The transaction object: the `EntityManager`, or what the runner handed to its work. */
    readonly tx: unknown = manager,
  ) {}

  /** False once the method has settled: nothing joins it any more. */
  get open(): boolean {
    return !this.ended;
  }

  /** Keeps a nested call's scope until the transaction ends; false when it has already ended (close it now). */
  keep(scope: KeptScope): boolean {
    if (this.ended) return false;
    this.kept.push(scope);
    return true;
  }

  /** Stops accepting nested scopes; returns those kept. */
  end(): readonly KeptScope[] {
    this.ended = true;
    return this.kept;
  }
}

const storage = new AsyncLocalStorage<ReadonlyMap<object, FencedTransaction>>();

/**
 * The fenced transaction of the current async call chain, kept per `LockService` like the re-entrancy context.
 * @internal
 */
export const LockTransactionContext = {
  /** The chain's fenced transaction through `owner`, if one is open. */
  current(owner: object): FencedTransaction | undefined {
    const transaction = storage.getStore()?.get(owner);
    return transaction?.open ? transaction : undefined;
  },

  /** Runs `fn` inside `transaction`. */
  run<T>(owner: object, transaction: FencedTransaction, fn: () => T): T {
    const next = new Map(storage.getStore() ?? []);
    next.set(owner, transaction);
    return storage.run(next, fn);
  },
};
