import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { LockConfigurationError, type LockError } from '../../errors/index.js';
import { isConnectionFailure, isReadOnlyServerError, isTransientDriverError, toLockError } from './pg-error.util.js';
import { lockDialectOf } from '../lock-dialect.util.js';
import { poolKeepsSessions } from './postgres-pooler.util.js';
import { checkoutPgClient } from './postgres-checkout.util.js';
import { PoolCheckoutTimeoutError } from '../pool-checkout.util.js';
import type { SessionLane } from './session-lane.util.js';
import type { StatementRunnerOptions } from '../statement-runner.options.js';
import {
  DEFAULT_LOCK_TABLES,
  inLockTables,
  isDefaultLockTables,
  type LockTables,
  lockStatementName,
} from '../lock-tables.util.js';

/** Smallest pool the library works with: two kept sessions, and statements beside them. */
const MIN_POOL_SIZE = 3;

/** A statement to run, optionally on a session lane. @internal */
export type LockStatement = QueryConfig & { lane?: SessionLane };

/**
 * Runs the lock statements on a TypeORM DataSource's own `pg` pool: retries, client-side timeouts, and the mapping of
 * driver errors to `LockError`s. Shared by the instance's store and the admin store.
 * @internal
 */
export class PostgresStatementRunner {
  private retryCount = 0;

  /**
   * @param failed sees every error a statement ends with, once retries are over (for counting them), and returns the
   *   error to throw.
   */
  constructor(
    private readonly dataSource: DataSource,
    private readonly options: StatementRunnerOptions,
    private readonly failed: (error: LockError) => LockError = (error) => error,
  ) {
    if (lockDialectOf(dataSource) !== 'postgres') {
      throw new LockConfigurationError(`PostgresStatementRunner needs a PostgreSQL DataSource`);
    }
  }

  /** Where the lock tables are. */
  get tables(): LockTables {
    return this.options.tables ?? DEFAULT_LOCK_TABLES;
  }

  /** `sql`, written for the lock tables' schema (every statement sent goes through here). */
  sql(sql: string): string {
    return inLockTables(sql, this.tables);
  }

  /** The statement for the lock tables' schema: its text, and the name it is prepared under. */
  private placed(query: QueryConfig): QueryConfig {
    if (isDefaultLockTables(this.tables)) return query;
    const placed = { ...query, text: this.sql(query.text) };
    return query.name === undefined ? placed : { ...placed, name: lockStatementName(query.name, this.tables) };
  }

  /** Round trips repeated after a transient failure since start. */
  get retries(): number {
    return this.retryCount;
  }

  /** Counts one retry made by a caller (a session opened again). */
  countRetry(): void {
    this.retryCount++;
  }

  /**
   * Runs one statement (on `lane` when given and idle, else on the pool), retrying what is safe to retry with
   * exponential backoff and full jitter: a statement the server rolled back (serialization failure, deadlock, lock
   * timeout), and a connection that could not be had (nothing was sent: the server may be restarting). A connection
   * lost after the statement was sent is never retried: the statement may have committed (`outcomeUnknown` for a
   * statement that grants). Every statement times out on the client after `queryTimeoutMs`; its connection is then
   * destroyed, since the statement may still run on it. A pool connection not had within `queryTimeoutMs` (a busy
   * pool, a server that does not answer) fails the statement too, unsent and not retried: it already waited its time.
   */
  async run<R extends QueryResultRow = QueryResultRow>(
    operation: string,
    grants: boolean,
    { lane, ...query }: LockStatement,
  ): Promise<QueryResult<R>> {
    const { maxAttempts, initialDelayMs, maxDelayMs } = this.options.retry;
    const timed = { ...this.placed(query), query_timeout: this.options.queryTimeoutMs };
    for (let attempt = 1; ; attempt++) {
      let sent = false;
      try {
        return await this.send<R>(lane, timed, () => (sent = true));
      } catch (error) {
        const unsent = !sent && isConnectionFailure(error) && !(error instanceof PoolCheckoutTimeoutError);
        const retry = isTransientDriverError(error) || unsent;
        if (!retry || attempt >= maxAttempts) throw this.failed(toLockError(error, operation, grants && sent));
        this.retryCount++;
        await sleep(Math.random() * Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1)));
      }
    }
  }

  /**
   * A connection of its own, out of the DataSource's pool, for a session that outlives one statement (the instance
   * lock, and the LISTEN connection once something waits). Two such sessions plus the statements need a pool of at
   * least `MIN_POOL_SIZE`; a smaller one would end in statements waiting forever for a connection. Had within
   * `queryTimeoutMs`, like a statement's.
   */
  async connect(operation: string): Promise<PoolClient> {
    const pool = this.pool();
    this.assertRoomForSessions();
    try {
      return await checkoutPgClient(pool, this.options.queryTimeoutMs);
    } catch (error) {
      throw toLockError(error, operation, false);
    }
  }

  /** Throws `LockConfigurationError` when the pool is too small to lend two kept sessions (see `connect`). */
  assertRoomForSessions(): void {
    const max = (this.pool().options as { max?: number }).max ?? 10;
    if (max < MIN_POOL_SIZE) {
      throw new LockConfigurationError(
        `The lock DataSource's pool allows ${max} connection(s); LockModule keeps up to 2 for itself (instance lock, ` +
          `LISTEN) and needs at least ${MIN_POOL_SIZE}: raise \`extra.max\` (or poolSize) of the DataSource, or give ` +
          'LockModule option directUrl (the kept sessions then have a pool of their own)',
      );
    }
  }

  /** Sends `query` on the lane's connection when it is free, else on a pool connection; `onSent` once it is sent. */
  private async send<R extends QueryResultRow>(
    lane: SessionLane | undefined,
    query: QueryConfig & { query_timeout: number },
    onSent: () => void,
  ): Promise<QueryResult<R>> {
    const pool = this.pool();
    const borrowed = lane?.borrow();
    const client = borrowed ?? (await checkoutPgClient(pool, query.query_timeout));
    // A named prepared statement is safe on a session of its own: the lane's (a kept session: proven direct, or on a
    // pooler declared in session mode) and the pool's once it is proven (or declared) to give sessions. Behind any
    // other pool (or before the start-up check told) the statement goes unnamed: another client's server connection
    // may already hold the name (42P05) or this one's may not (26000), and PgBouncer before 1.21 keeps neither.
    const named = borrowed !== undefined || poolKeepsSessions(this.dataSource);
    const statement = named || query.name === undefined ? query : { ...query, name: undefined };
    // A pool connection has the checkout's 'error' listener until it is released (see checkoutPgClient): a server that
    // ends the session right after the answer (shutdown, terminated backend) does not crash the process.
    onSent();
    let failure: unknown;
    try {
      return await client.query<R>(statement);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      // A connection to a read-only server (a demoted primary a proxy still routes to) goes too: the next finds the primary.
      const broken = failure !== undefined && (isConnectionFailure(failure) || isReadOnlyServerError(failure));
      if (borrowed) lane!.giveBack(borrowed, broken);
      else {
        // A broken connection (or one whose statement timed out and may still run) is destroyed, not pooled (pg-pool
        // listens to it while it is destroyed).
        client.release(broken);
      }
    }
  }

  /** The DataSource's own `pg` pool. */
  pool(): Pool {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    if (!this.dataSource.isInitialized || !pool) {
      throw new LockConfigurationError('The lock DataSource is not initialized (or was destroyed)');
    }
    return pool;
  }
}
