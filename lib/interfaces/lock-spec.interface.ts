/**
 * How a lock is held: `read` (shared, up to the read permits) or `write` (exclusive of readers, up to the write
 * permits).
 * @publicApi
 */
export type LockMode = 'read' | 'write';

/**
 * One lock of a group, as users write it: `'WS1_READ'` / `'WS1_WRITE'` (the name, then `_READ` or `_WRITE`), or
 * `{ name: 'WS1', mode: 'read' }`. A name is any string of 1–200 bytes of UTF-8 without control characters and not
 * ending with a space, stored and compared byte for byte (never normalised, case-sensitive). The string form is the
 * name followed by `_READ` or `_WRITE` (only the last suffix counts: `'A_READ_WRITE'` is `A_READ` for write); prefer
 * the object form for names built from input.
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
