/**
 * What `LockService.getHealth()` reports of this instance and its database.
 * @publicApi
 */
export interface LockHealth {
  /** True when nothing below is a problem: the instance can grant and keep its grants. */
  readonly healthy: boolean;
  /** The `appId` of the instance. */
  readonly appId: string;
  /**
   * Whether the instance holds its app id now. False while its session is broken (it takes it back on the next
   * renewal tick once the database answers) and for good once another instance took it (`fenced`).
   */
  readonly appIdHeld: boolean;
  /** True once another instance took this instance's app id: it grants nothing more until it restarts. */
  readonly fenced: boolean;
  /**
   * Whether the database answered the health probe within `queryTimeoutMs`, and `read-only` when it answered but may
   * not write (a standby, a demoted primary that a proxy still routes to: PostgreSQL `pg_is_in_recovery()` or
   * `transaction_read_only`, MySQL/MariaDB `read_only`): unhealthy, and the app id is not held there.
   */
  readonly database: 'reachable' | 'read-only' | 'unreachable';
  /**
   * The lock migrations: all of this library version's recorded as run (`current`), some not run (`outdated`), no lock
   * tables (`missing`), or `unknown` when the database did not answer.
   */
  readonly schema: 'current' | 'outdated' | 'missing' | 'unknown';
  /** For how long lease renewals have been failing (0 while they succeed); unhealthy past half a lease. */
  readonly renewalFailingForMs: number;
  /** Grants this instance holds. */
  readonly grantsHeld: number;
  /** Calls of this instance waiting for a group now. */
  readonly waiters: number;
  /** What is wrong, one sentence each, with what to do; empty when healthy. */
  readonly problems: string[];
}
