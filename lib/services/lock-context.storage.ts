import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockMode } from '../interfaces/index.js';

/** What one async call chain holds through one `LockService`. */
interface ChainLocks {
  /** Every lock the chain holds, by name. */
  readonly held: ReadonlyMap<string, LockMode>;
  /** The stamp of the innermost grant the chain took. */
  readonly stamp: number;
}

const storage = new AsyncLocalStorage<ReadonlyMap<object, ChainLocks>>();
const NOTHING: ReadonlyMap<string, LockMode> = new Map();

/**
 * Re-entrancy: the locks held by the current async call chain, so that a `@WithLocks` method called from another
 * one does not wait for locks its own caller holds. Kept per `LockService` (two applications in one process stay
 * apart).
 * @internal
 */
export const LockContext = {
  /** The locks the current chain holds through `owner`. */
  held(owner: object): ReadonlyMap<string, LockMode> {
    return storage.getStore()?.get(owner)?.held ?? NOTHING;
  },

  /** The stamp of the innermost grant the current chain took through `owner`. */
  stamp(owner: object): number | undefined {
    return storage.getStore()?.get(owner)?.stamp;
  },

  /** Runs `fn` with `locks` recorded for `owner`, on top of what the chain already holds. */
  run<T>(owner: object, locks: ChainLocks, fn: () => T): T {
    const next = new Map(storage.getStore() ?? []);
    next.set(owner, locks);
    return storage.run(next, fn);
  },
};
