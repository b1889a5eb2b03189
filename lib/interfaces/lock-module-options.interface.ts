import type { LockPermits } from './lock-spec.interface.js';
import type { LockTablesOptions } from './lock-tables-options.interface.js';
import type { LockTelemetryOptions } from './lock-telemetry-options.interface.js';

/**
 * How `LockService` retries a database operation that the server rolled back for a transient reason (serialization
 * failure, deadlock, lock or statement timeout). Other failures are raised at once as `LockStoreError`.
 * @publicApi
 */
export interface LockRetryOptions {
  /**
   * Attempts in all, the first included.
   * @default 5
   */
  maxAttempts?: number;
  /**
   * Delay before the first retry; doubled on each further retry, with full jitter.
   * @default 2
   */
  initialDelayMs?: number;
  /**
   * Upper bound of one delay.
   * @default 100
   */
  maxDelayMs?: number;
}

/**
 * Options of `LockModule.forRoot()` / `forRootAsync()`.
 * @publicApi
 */
export interface LockModuleOptions {
  /**
   * Identifies this running instance of the service (seed 000's `app_id`), 1–200 characters. It must be **stable
   * across restarts** of the same instance (e.g. `ws1-0` from a StatefulSet ordinal, or a name you give each process)
   * and **unique among live instances**: at start-up `releaseAllLocks()` frees every lock this `appId` left behind.
   */
  appId: string;
  /**
   * Permits used for a (name, mode) that has no row in `locking_permissions`.
   * @default { read: 1, write: 1 }
   */
  defaultPermits?: Partial<LockPermits>;
  /**
   * How often the permits cache is reloaded from `locking_permissions`, in milliseconds; `0` disables the task
   * (grants never depend on the cache: they read the committed permits in the acquiring statement).
   * @default 30000
   */
  permitsRefreshIntervalMs?: number;
  /**
   * Free this `appId`'s leftover locks when the module starts (seed 000's `releaseAllLocks()` at init).
   * @default true
   */
  releaseOnStartup?: boolean;
  /**
   * Retry policy for transient database failures.
   * @default { maxAttempts: 5, initialDelayMs: 2, maxDelayMs: 100 }
   */
  retry?: LockRetryOptions;
  /**
   * Lease of every grant: it expires at database time + `leaseMs` unless renewed. This process renews its grants
   * every `renewIntervalMs` while it holds them; a grant whose holder died (or froze) past its lease is freed by the
   * reaper of any instance. When renewals fail (the database is unreachable), the grant's signal fires `leaseMs` after
   * the last successful renewal was sent, by this process's own monotonic clock: before the lease can end in the
   * database.
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How often this process renews its leases (one statement for all of its grants).
   * @default leaseMs / 3
   */
  renewIntervalMs?: number;
  /**
   * How often the reaper looks for stale grants; `0` disables it on this instance (keep it on somewhere).
   * @default 10000
   */
  reaperIntervalMs?: number;
  /**
   * The longest this instance holds one grant, renewed or not; `0` = no limit. The instance's own lease
   * renewals stop extending a grant past `maxHoldMs` after its acquisition (database time), so its lease ends then and
   * any reaper frees it; the holder's signal fires first, by `maxHoldMs` on its own monotonic clock. It applies to the
   * grants of the instance that sets it (set it alike on every instance that should obey it), but not to a leader's
   * term (`@Leader`, `LeaderService`): the role's grant lasts for as long as the replica renews its lease.
   * @default 0
   */
  maxHoldMs?: number;
  /**
   * Ended log rows (RELEASED, REAPED, RECOVERED, FORCED) older than this are deleted by the reaper task of every
   * instance, as fast as they age out (measured: retention holds at the full grant rate); `0` keeps them.
   * @default 604800000 (7 days)
   */
  logRetentionMs?: number;
  /**
   * Stale grants the reaper frees per statement (log rows are pruned 5,000 per statement, for up to half of
   * `reaperIntervalMs` per run).
   * @default 100
   */
  reaperBatchSize?: number;
  /**
   * While waiting (`waitMs`), re-check the group at least this often even without a notification, so that a lost
   * notification or a dropped listening connection never strands a waiter. A waiter's place in the queue lasts
   * 3 × this (at least 1 s) after its last check: a waiter whose process died holds others off no longer.
   * @default 1000
   */
  waitRecheckMs?: number;
  /**
   * Every statement of the library fails on the client after this long (`LockStoreError`; for an acquisition with
   * `outcomeUnknown: true`), and its connection is destroyed: a connection stalled by the network or a proxy never
   * holds a caller, a renewal or `app.close()` for good. A statement that gets no pool connection within this long
   * fails the same way (`outcomeUnknown: false`). Keep it above the slowest acquisition you expect under contention.
   * @default 10000
   */
  queryTimeoutMs?: number;
  /**
   * How long start-up (the server check, the `appId` claim, the recovery of a previous life, the permits cache) keeps
   * trying through transient failures: the database not answering or restarting, a terminated backend (57P01), a
   * read-only server (a failover under way), too many connections. It logs once what it waits for, and throws
   * `LockStartupTimeoutError` (naming this option) once the budget is spent; `0` gives up at the first failure. A
   * configuration error (missing lock tables, a server setting, a live twin holding the `appId`) fails at once.
   * @default 30000
   */
  startupTimeoutMs?: number;
  /**
   * How long `app.close()` waits for the holders it cannot await as Promises: a live subscription of an Observable
   * under `@WithLocks`, and an `acquireLocks` handle not yet released (its `signal` fires with `LockShutdownError` when
   * `close()` begins). The grace period starts then, once for all of them; when it ends, the shutdown ends each one
   * still holding (a subscription errors with `LockShutdownError` after its release; a handle is released for its
   * holder, whose own `release()` later resolves) and logs a warning naming it, while the database is still open.
   * `0` ends them at once. Locked calls returning a Promise (`@WithLocks`, `withLocks`) are awaited to their end,
   * whatever this says.
   * @default 10000
   */
  shutdownGraceMs?: number;
  /**
   * PostgreSQL only: a connection string that reaches the server **directly** (or through a TCP proxy),
   * like Prisma's `directUrl`. The two sessions the library keeps for the life of the instance take a connection of
   * their own from it instead of the DataSource's pool: the app id's session advisory lock (which refuses twins) and
   * `LISTEN` (which wakes waiters). Needed when the DataSource connects through a pooler in transaction mode
   * (PgBouncer `pool_mode = transaction`, Supabase/Neon/Heroku "pooled" URLs, RDS Proxy): there a session lock would
   * stay on a server connection that other clients then share, and notifications would not arrive. Without it, such a
   * DataSource is refused at start-up with `LockConfigurationError` (see docs/poolers.md).
   *
   * The user, password and database it does not state are the DataSource's own, and so are its TLS options when it has
   * no `sslmode`. At start-up it must reach the same server and database as the DataSource, and be proven to reach
   * PostgreSQL itself (its connections run in the backend announced at their start-up; a TCP proxy passes, a pooler
   * does not). It holds at most two connections per instance.
   * @default undefined (the sessions come from the DataSource's pool)
   */
  directUrl?: string;
  /**
   * PostgreSQL only: what sits between the DataSource and the server.
   * - `'detect'` proves at start-up, with two pool connections, that each runs its statements in the backend the
   *   server announced when it connected (PostgreSQL directly, or a TCP proxy such as HAProxy): the hot path then
   *   keeps its named prepared statements. Anything else is a pooler (PgBouncer, RDS Proxy, pgcat, Supavisor,
   *   Odyssey): its statements go unnamed, and it needs `directUrl`, since whether a pooler shares its server
   *   connections between transactions cannot be proven by observation.
   * - `'transaction'` declares a transaction pooler without checking: statements go unnamed, `directUrl` is needed.
   * - `'session'` declares a pooler in session mode (PgBouncer `pool_mode = session`): each client connection keeps
   *   one server connection for its life, so the kept sessions come from the pool and statements stay named. Declare
   *   it only for a pooler that never shares a server connection between clients; start-up still refuses it if its
   *   connections are seen sharing.
   * @default 'detect'
   */
  pooler?: 'detect' | 'transaction' | 'session';
  /**
   * Names this process in the lock log and in `pg_stat_activity`.
   * @default `${hostname}:${pid}`
   */
  instance?: string;
  /**
   * Commit releases asynchronously (`synchronous_commit = off` for the release transaction only). A release then
   * costs no WAL flush; the lock is free for others at once. If the database server crashes within a fraction of a
   * second after a release that no later grant has flushed, that release is undone and the lock shows as held again
   * until this `appId` restarts (or its lease expires, with leases). Exclusion is never weakened.
   * @default true
   */
  asyncRelease?: boolean;
  /**
   * Metrics and spans through OpenTelemetry, when the application has `@opentelemetry/api` installed.
   * @default { enabled: true, lockNameAttribute: the name up to its first ':' }
   */
  telemetry?: LockTelemetryOptions;
  /**
   * Rows of `locking_instances` (one per `appId` ever started: with pod names as `appId`, every deploy adds some) are
   * retired by the reaper task of every instance once their instance is gone (nobody holds its app id), has no
   * grant and no waiter left, and was last started longer ago than this; `0` keeps them. A retired row only meant
   * that a restart of that `appId` on the same machine could free its grants at once, and it has none left.
   * @default 604800000 (7 days)
   */
  instanceRetentionMs?: number;
  /**
   * A connection string for a connection pool of the library's own: `postgres://` or `postgresql://` for PostgreSQL,
   * `mysql://` or `mariadb://` for MySQL 8.0+ and MariaDB 10.6+ (the scheme picks the dialect). The application then
   * needs no TypeORM of its own (Prisma, Drizzle, Kysely, Knex or plain drivers beside it): the library opens the pool
   * when the module starts and closes it at `app.close()`, once every locked call has released its grants. Give it to
   * `LockModule.forRoot()` itself (not through `forRootAsync`'s factory), and without the `dataSource` extra. The lock
   * tables come from `nestjs-db-locks migrate`, or from `migrationsRun`. See docs/data-layers.md.
   * @default undefined (the application's TypeORM DataSource)
   */
  url?: string;
  /**
   * With `url`: apply the lock migrations that have not run yet when the module starts, recorded in TypeORM's
   * `migrations` table as `nestjs-db-locks migrate` records them. Start one instance at a time with it, or run the
   * command in the deploy instead.
   * @default false
   */
  migrationsRun?: boolean;
}

/**
 * Options that shape the module itself and must be known synchronously (they cannot come from `useFactory`).
 * @publicApi
 */
export interface LockModuleExtras extends LockTablesOptions {
  /**
   * Register `LockModule` as a global module.
   * @default true
   */
  isGlobal?: boolean;
  /**
   * Name of the TypeORM DataSource that holds the lock tables (as given to `TypeOrmModule.forRoot({ name })`).
   * @default the default DataSource
   */
  dataSource?: string;
  /**
   * The database of that DataSource: `'postgres'`, or `'mysql'` for MySQL 8.0+ and MariaDB 10.6+. It picks the
   * entities `LockModule` registers on the DataSource (`LOCK_ENTITIES` or `LOCK_MYSQL_ENTITIES`), which TypeORM needs
   * before the DataSource exists; the engine follows the DataSource's own `type`, and a mismatch fails at start-up
   * with `LockConfigurationError`.
   * @default 'postgres'
   */
  dialect?: 'postgres' | 'mysql';
  /**
   * Mount `LockHttpInterceptor` globally, so that a controller whose `@WithLocks` group is not available answers
   * HTTP 423 Locked instead of 500.
   * @default true
   */
  mountHttpInterceptor?: boolean;
  /**
   * `LockModule.forRootAsync` only: the options its factory returns give `url`, and the library runs on a connection
   * of its own opened with it (what `url` given to `forRoot` does by itself). The module must know it before the
   * factory runs: it then registers nothing on a TypeORM DataSource of the application's. The dialect comes from the
   * URL's scheme when the module starts.
   * @default false (true with `forRoot({ url })`)
   */
  ownConnection?: boolean;
}
