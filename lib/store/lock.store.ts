import type { LockRequest } from '../interfaces/index.js';

/** One row of `locking_permissions`, in the library's vocabulary. @internal */
export interface PermitsRow {
  readonly name: string;
  readonly mode: 'read' | 'write';
  readonly permits: number;
}

/**
 * The storage port of the lock engine, bound to one `appId`: each call is a short transaction of its own, never part
 * of a caller's transaction. `PostgresLockStore` is the implementation; the class doubles as the injection token.
 * @internal
 */
export abstract class LockStore {
  /** Takes the whole group or nothing; returns the stamp, or 0 when some lock is not available. */
  abstract tryAcquire(group: readonly LockRequest[]): Promise<number>;
  /** Deletes this app's rows of `stamp`; false when none matched. */
  abstract release(stamp: number): Promise<boolean>;
  /** Deletes every row of this app; returns how many rows were deleted. */
  abstract releaseAll(): Promise<number>;
  /** Reads every permits row. */
  abstract loadPermits(): Promise<PermitsRow[]>;
  /** Writes (or, with `null`, deletes) one permits row. */
  abstract savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void>;
  /** Round trips repeated after a transient failure since start. */
  abstract readonly retries: number;
}
