import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockMode } from '../interfaces/index.js';

/** The locks an async call chain holds, per `LockService` (two applications in one process stay apart). */
type HeldLocks = ReadonlyMap<object, ReadonlyMap<string, LockMode>>;

const storage = new AsyncLocalStorage<HeldLocks>();
const NOTHING: ReadonlyMap<string, LockMode> = new Map();

/**
 * Re-entrancy: the locks held by the current async call chain, so that a `@WithLocks` method called from another
 * one does not wait for locks its own caller holds.
 * @internal
 */
export const LockContext = {
  /** The locks the current chain holds through `owner`. */
  held(owner: object): ReadonlyMap<string, LockMode> {
    return storage.getStore()?.get(owner) ?? NOTHING;
  },

  /** Runs `fn` with `held` recorded for `owner`, on top of what the chain already holds. */
  run<T>(owner: object, held: ReadonlyMap<string, LockMode>, fn: () => T): T {
    const next = new Map(storage.getStore() ?? []);
    next.set(owner, held);
    return storage.run(next, fn);
  },
};
