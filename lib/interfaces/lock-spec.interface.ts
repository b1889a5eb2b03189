/**
 * How a lock is held: `read` (shared, up to the read permits) or `write` (exclusive of readers, up to the write
 * permits).
 * @publicApi
 */
export type LockMode = 'read' | 'write';

/**
 * One lock of a group, as users write it: `'WS1_READ'` / `'WS1_WRITE'` (the name, then `_READ` or `_WRITE`), or
 * `{ name: 'WS1', mode: 'read' }`. Names are 1–200 characters of letters, digits and `_ . : - /`.
 * @publicApi
 */
export type LockSpec = `${string}_READ` | `${string}_WRITE` | LockRequest;

/**
 * A parsed, validated lock: the canonical form every group is reduced to.
 * @publicApi
 */
export interface LockRequest {
  /** The lock's name, e.g. `WS1`. */
  readonly name: string;
  /** The mode it is requested in. */
  readonly mode: LockMode;
}

/**
 * The permits in force for one lock name.
 * @publicApi
 */
export interface LockPermits {
  /** How many readers may hold the name at once. */
  readonly read: number;
  /** How many writers may hold the name at once (writers never overlap readers). */
  readonly write: number;
}
