/**
 * Options of `@Leader` and `LeaderService.campaign`.
 * @publicApi
 */
export interface LeaderOptions {
  /**
   * How long this replica waits, after its leader method returned or threw, before it stands again as a candidate
   * (at the back of the queue). After a lost term (a lease that could not be renewed) it stands again at once.
   *
   * Failures back off: when the method throws again before its term lasted 5 s, the wait doubles at each failure in a
   * row, from twice `rejoinDelayMs` (at least 500 ms) up to 30 s (or `rejoinDelayMs` when that is longer), so
   * `rejoinDelayMs: 0` and a method that throws at once make 4 terms in the first 2 s, not hundreds. A method that
   * returns, or a term that lasted 5 s, resets it. The first failure of a streak is logged as an ERROR, the next ones
   * at most one line a minute (with their count), the others at debug level.
   * An integer from 0 to 2147483647.
   * @default 1000
   */
  readonly rejoinDelayMs?: number;
}

/**
 * One term of leadership of a role: from this replica's election to the end of its leadership.
 * @publicApi
 */
export interface LeaderTerm {
  /** The role led. */
  readonly role: string;
  /**
   * The term's fencing token: 1 at the role's first election and one more at each election since, whichever replica
   * wins it, across restarts of the replicas and of the database (it is kept in `locking_leaders`). Give it with
   * every write the leader makes to another system, which refuses a token smaller than the largest it has seen.
   */
  readonly token: number;
  /** When the term began (the database's clock). */
  readonly since: Date;
}

/**
 * Why this replica's leadership of a role began or ended (`LeadershipChange.reason`):
 * - `elected`: it won the role;
 * - `lost`: its grant may be lost (a lease it could not renew in time, a reaper, a forced release, a twin);
 * - `work-ended`: its leader method returned or threw;
 * - `resigned`: `LeaderService.resign(role)` was called;
 * - `shutdown`: the application is closing (`app.close()`).
 * @publicApi
 */
export type LeadershipChangeReason = 'elected' | 'lost' | 'work-ended' | 'resigned' | 'shutdown';

/**
 * This replica began (`leading: true`) or stopped (`leading: false`) leading a role, as `LeaderService.changes()`
 * emits it. A stop is emitted at the instant the term's signal fires, before the role is handed over.
 * @publicApi
 */
export interface LeadershipChange {
  /** The role. */
  readonly role: string;
  /** Whether this replica leads the role from now on. */
  readonly leading: boolean;
  /** The term that began or ended. */
  readonly term: LeaderTerm;
  /** Why. */
  readonly reason: LeadershipChangeReason;
}

/**
 * The work of a leader: called when this replica becomes the leader of a role, with a `signal` that fires when the
 * leadership may be lost or is ending (its reason: a `LockLostError`, a `LockShutdownError` or a
 * `LeadershipEndedError`) and the term. The term ends when it returns (or its Promise settles) or throws.
 * @publicApi
 */
export type LeaderWork = (signal: AbortSignal, term: LeaderTerm) => unknown;
