import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockMode } from '../interfaces/index.js';

/**
 * One grant taken by a locked call, as the calls of its chain see it. The call that took it is its first user; a
 * nested call that reuses some of its locks is another user for as long as it runs. The grant closes when its last
 * user has settled (`drained` resolves), and only then is it released: a reusing call never outlives the grant it
 * reuses. A closed grant is never reused, even though the async context of work started under it still names it.
 * @internal
 */
export class ChainGrant {
  private users = 1;
  private closed = false;
  private onDrained: () => void = () => undefined;
  /** Resolves when the last user has left. */
  readonly drained = new Promise<void>((resolve) => (this.onDrained = resolve));

  constructor(
    readonly stamp: number,
    /** The locks of this grant, by name. */
    readonly locks: ReadonlyMap<string, LockMode>,
  ) {}

  /** False once every user has left: the grant is being released, or is. */
  get open(): boolean {
    return !this.closed;
  }

  /** A nested call starts reusing the grant. */
  enter(): void {
    this.users++;
  }

  /** A user has settled. */
  leave(): void {
    if (--this.users > 0 || this.closed) return;
    this.closed = true;
    this.onDrained();
  }
}

const storage = new AsyncLocalStorage<ReadonlyMap<object, readonly ChainGrant[]>>();
const NONE: readonly ChainGrant[] = [];

/**
 * Re-entrancy: the grants taken by the current async call chain (outermost first), so that a `@WithLocks` method
 * called from another one does not wait for locks its own caller holds. Kept per `LockService` (two applications in
 * one process stay apart). Readers must skip grants that are no longer open (and those lost meanwhile).
 * @internal
 */
export const LockContext = {
  /** The grants the current chain took through `owner`, open or not, outermost first. */
  chain(owner: object): readonly ChainGrant[] {
    return storage.getStore()?.get(owner) ?? NONE;
  },

  /** The innermost grant of the current chain that is still open. */
  current(owner: object): ChainGrant | undefined {
    return LockContext.chain(owner).findLast((grant) => grant.open);
  },

  /** Runs `fn` with `chain` as what the chain holds through `owner`. */
  run<T>(owner: object, chain: readonly ChainGrant[], fn: () => T): T {
    const next = new Map(storage.getStore() ?? []);
    next.set(owner, chain);
    return storage.run(next, fn);
  },
};
