import type { LockPermits, LockRequest } from '../interfaces/index.js';

/** One row of `locking_permissions`, in the library's vocabulary. @internal */
export interface PermitsRow {
  readonly name: string;
  readonly mode: 'read' | 'write';
  readonly permits: number;
}

/**
 * The storage port of the lock engine: each method is one short transaction of its own, never part of a caller's
 * transaction. `PostgresLockStore` is the implementation; the class doubles as the injection token.
 * @internal
 */
export abstract class LockStore {
  /** Takes the whole group for `appId` or nothing; returns the stamp, or 0 when some lock is not available. */
  abstract tryAcquire(appId: string, group: readonly LockRequest[], defaults: LockPermits): Promise<number>;
  /** Deletes `appId`'s rows of `stamp`; false when none matched. */
  abstract release(appId: string, stamp: number): Promise<boolean>;
  /** Deletes every row of `appId`; returns how many groups were freed. */
  abstract releaseAll(appId: string): Promise<number>;
  /** Reads every permits row. */
  abstract loadPermits(): Promise<PermitsRow[]>;
  /** Writes (or, with `null`, deletes) one permits row. */
  abstract savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void>;
  /** Round trips repeated after a transient failure since start. */
  abstract readonly retries: number;
}
