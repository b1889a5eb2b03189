import type { LockJobRuns } from './lock-job.interface.js';
import type { LockTransactionRunnerToken } from './lock-transaction-runner.interface.js';
import type { LockRequest, LockSpec } from './lock-spec.interface.js';

/**
 * What to do when the group is not available.
 * - `'throw'`: throw `LockNotAcquiredError` (HTTP 423 through `LockHttpInterceptor`);
 * - `'skip'`: do not run the method, log one line, and return `undefined`.
 * @publicApi
 */
export type LockUnavailableAction = 'throw' | 'skip';

/**
 * Derives a call's group from the decorated method's arguments (after Nest's pipes have run, for a controller
 * handler): e.g. `(loanId: number) => [`loan:${loanId}_WRITE`]`. It receives the method's leading parameters, and
 * the compiler checks them against the method's. It runs at every call, before anything is taken; a result that is
 * not a valid group fails the call with `InvalidLockSpecError` (HTTP 400 through `LockHttpInterceptor`). An error it
 * throws fails the call unchanged. It may return one spec or several; strings are typed `string` (a template literal
 * such as `` `loan:${id}_WRITE` `` is one), and checked at run time.
 * @publicApi
 */
export type LockSpecsFactory<A extends unknown[] = never[]> = (
  ...args: A
) => string | LockRequest | Iterable<string | LockRequest>;

/**
 * Transaction isolation levels for a fenced transaction.
 * @publicApi
 */
export type LockTransactionIsolation = 'READ UNCOMMITTED' | 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';

/**
 * How `@WithLocks({ transaction })` opens its fenced transaction.
 * @publicApi
 */
export interface WithLocksTransactionOptions {
  /**
   * The transaction's isolation level.
   * @default the database's default (READ COMMITTED on PostgreSQL)
   */
  isolation?: LockTransactionIsolation;
  /**
   * The name of a TypeORM DataSource registered in the application (`TypeOrmModule.forRoot({ name, … })`). It must
   * reach the database that holds the lock tables: the fence is a statement on them inside the transaction. Checked
   * at start-up.
   * @default the DataSource `LockModule` uses
   */
  dataSource?: string;
  /**
   * Runs the method in a transaction of the application's own data layer instead of TypeORM's: the injection token of
   * a `LockTransactionRunner` provider (or the runner itself). The method reaches the transaction through
   * `LockService.currentTransaction(runner)`; the fence is sent through the runner as the last statement. The layer
   * must reach the database that holds the lock tables. Checked at start-up; cannot be combined with `dataSource`.
   * @default none: a TypeORM transaction on the DataSource of `dataSource`
   */
  runner?: LockTransactionRunnerToken;
}

/**
 * Options form of `@WithLocks` (and of `LockService.withLocks`). `A` is the decorated method's leading parameters,
 * as `locks` declares them when it is a function.
 * @publicApi
 */
export interface WithLocksOptions<A extends unknown[] = never[]> {
  /**
   * The group, e.g. `['WS2_WRITE', 'WS1_READ']`, or a function of the method's arguments that returns it, e.g.
   * `(loanId: number) => [`loan:${loanId}_WRITE`]` (see `LockSpecsFactory`).
   */
  locks: readonly LockSpec[] | LockSpecsFactory<A>;
  /**
   * What to do when the group is not available.
   * @default 'skip' for `@Cron` / `@Interval` / `@Timeout` methods, 'throw' otherwise
   */
  onUnavailable?: LockUnavailableAction;
  /**
   * Wait up to this many milliseconds for the group before giving up (see `TryLocksOptions.waitMs`): at most
   * 2147483647 (2^31 − 1); a larger value is refused when the module starts.
   * @default 0
   */
  waitMs?: number;
  /**
   * Seconds after which a retry makes sense; sent as `Retry-After` with HTTP 423.
   * @default none (no header)
   */
  retryAfterSeconds?: number;
  /**
   * Runs the method in a **fenced transaction**: once the group is held, a transaction is opened on the DataSource;
   * the method reaches its `EntityManager` through `LockService.currentManager()` (with `runner`: a transaction of
   * the application's data layer, reached through `LockService.currentTransaction(runner)`); when the method
   * resolves, the grant's "business done" is recorded as the transaction's last statement (it fails if the grant was
   * reaped or its lease expired), then the transaction commits, then the group is released. A lost grant rolls the
   * transaction back and the call fails with `LockLostError` (HTTP 409). `true` uses the defaults of
   * `WithLocksTransactionOptions`. Locks taken by nested `@WithLocks` calls inside the transaction are fenced with it
   * and released after it commits.
   * @default false
   */
  transaction?: boolean | WithLocksTransactionOptions;
  /**
   * For a `@Cron` or `@Interval` job: whether each tick runs once across the fleet (claimed in the database, recorded
   * in the run history) or on every replica (never two at once). Ignored on other methods; a `@Timeout` job runs on
   * every replica that starts.
   * @default 'once-per-tick'
   */
  scheduledRuns?: LockJobRuns;
}
