import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { LockConfigurationError, LockStoreError } from '../errors/index.js';
import type { LockGrant, LockLogEntry, LockLogStatus, LockRequest } from '../interfaces/index.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import {
  LockStore,
  type BusyLock,
  type InstanceSession,
  type ListenerCallbacks,
  type LockListener,
  type PermitsRow,
  type RenewOutcome,
} from './lock.store.js';
import { isConnectionFailure, isTransientDriverError, toLockError } from './pg-error.util.js';
import * as SQL from './postgres-lock.queries.sql.js';
import { SELECT_BUSY_LOCKS } from './postgres-lock-waiting.queries.sql.js';
import { openInstanceSession, openListener } from './postgres-sessions.util.js';
import { PostgresHotPath } from './postgres-hot-path.js';
import type { SessionLane } from './session-lane.util.js';

/** Smallest pool the library works with: two kept sessions, and statements beside them. */
const MIN_POOL_SIZE = 3;

interface LogRow {
  stamp: string;
  app_id: string;
  instance: string;
  lock_names: string[];
  lock_modes: string[];
  acquired: Date;
}

/**
 * `LockStore` over the application's TypeORM DataSource (PostgreSQL), straight on the DataSource's own `pg` pool. The
 * hot path (acquisitions and releases: batching, scalar twins, the instance session's connection) is
 * `PostgresHotPath`.
 * @internal
 */
export class PostgresLockStore extends LockStore {
  private retryCount = 0;
  private readonly hotPath: PostgresHotPath;

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: ResolvedLockOptions,
    private readonly telemetry = new LockTelemetry(),
  ) {
    super();
    if (dataSource.options.type !== 'postgres') {
      throw new LockConfigurationError(
        `nestjs-db-locks needs a PostgreSQL DataSource; "${String(dataSource.options.type)}" is not supported`,
      );
    }
    this.hotPath = new PostgresHotPath((operation, grants, query) => this.run(operation, grants, query), options);
  }

  get retries(): number {
    return this.retryCount;
  }

  tryAcquire(group: readonly LockRequest[], waiter?: string): Promise<number> {
    return this.hotPath.tryAcquire(group, waiter);
  }

  async registerWaiter(waiter: string, group: readonly LockRequest[], ttlMs: number): Promise<void> {
    await this.run('tryLocks', false, {
      text: SQL.REGISTER_WAITER,
      values: [waiter, this.options.appId, group.map((r) => r.name), group.map((r) => SQL.MODE_CODE[r.mode]), ttlMs],
    });
  }

  async unregisterWaiter(waiter: string): Promise<void> {
    await this.run('tryLocks', false, { text: SQL.UNREGISTER_WAITER, values: [waiter] });
  }

  async busyLocks(group: readonly LockRequest[]): Promise<BusyLock[]> {
    const { read, write } = this.options.defaultPermits;
    const result = await this.run<{ name: string; mode: string; busy: BusyLock['reason'] }>('tryLocks', false, {
      text: SELECT_BUSY_LOCKS,
      values: [group.map((r) => r.name), group.map((r) => SQL.MODE_CODE[r.mode]), read, write],
    });
    return result.rows.map((row) => ({
      request: { name: row.name, mode: row.mode === 'W' ? 'write' : 'read' },
      reason: row.busy,
    }));
  }

  release(stamp: number): Promise<boolean> {
    return this.hotPath.release(stamp);
  }

  async listen(callbacks: ListenerCallbacks): Promise<LockListener> {
    return openListener(await this.connect('listen'), callbacks);
  }

  async recover(): Promise<number> {
    const result = await this.run<{ freed: number }>('releaseAllLocks', false, {
      text: SQL.RECOVER_APP,
      values: [this.options.appId],
    });
    return result.rows[0]?.freed ?? 0;
  }

  async renew(stamps: readonly number[]): Promise<RenewOutcome> {
    const result = await this.run<{ renewed: string[]; live: string[] }>('renewLeases', false, {
      name: 'nestjs_db_locks_renew_v3',
      text: SQL.RENEW_LEASES,
      values: [this.options.appId, stamps, this.options.leaseMs],
    });
    const row = result.rows[0];
    return { renewed: new Set((row?.renewed ?? []).map(Number)), live: new Set((row?.live ?? []).map(Number)) };
  }

  async reap(): Promise<number[]> {
    const result = await this.run<{ reaped: string[] }>('reapStaleLocks', false, {
      text: SQL.REAP_STALE,
      values: [this.options.reaperBatchSize, this.options.maxHoldMs],
    });
    return (result.rows[0]?.reaped ?? []).map(Number);
  }

  async pruneLog(): Promise<number> {
    if (this.options.logRetentionMs === 0) return 0;
    const result = await this.run('pruneLockLog', false, {
      text: SQL.PRUNE_LOG,
      values: [this.options.logRetentionMs, this.options.reaperBatchSize],
    });
    return result.rowCount ?? 0;
  }

  async markBusinessDone(stamp: number, manager: EntityManager): Promise<boolean> {
    try {
      // TypeORM returns [rows, affected] for an UPDATE on PostgreSQL.
      const result: unknown = await manager.query(SQL.MARK_BUSINESS_DONE, [stamp, this.options.appId]);
      return Array.isArray(result) && result[1] === 1;
    } catch (error) {
      throw toLockError(error, 'markBusinessDone', false);
    }
  }

  async claimAppId(): Promise<InstanceSession | undefined> {
    const { appId, instance } = this.options;
    // A pooled connection that the server has just ended (a restart, a terminated backend) fails at once: take
    // another. Retrying is safe: an instance lock taken on a connection that died went with it.
    for (let attempt = 1; ; attempt++) {
      try {
        return await openInstanceSession(await this.connect('claimAppId'), appId, instance, this.hotPath.lane);
      } catch (error) {
        const retry = error instanceof LockStoreError && isConnectionFailure(error.cause);
        if (!retry || attempt >= this.options.retry.maxAttempts) throw this.telemetry.storeFailed(error);
        this.retryCount++;
      }
    }
  }

  async appIdHolderPid(): Promise<number | undefined> {
    const result = await this.run<{ pid: number }>('claimAppId', false, {
      text: SQL.SELECT_APP_ID_HOLDER_PID,
      values: [this.options.appId],
    });
    return result.rows[0]?.pid;
  }

  async endStaleClaim(pid: number): Promise<void> {
    await this.run('claimAppId', false, { text: SQL.END_STALE_CLAIM, values: [this.options.appId, pid] });
  }

  async describeAppIdHolder(): Promise<string> {
    const result = await this.run<{ application_name: string; client_addr: string | null; pid: number }>(
      'claimAppId',
      false,
      { text: SQL.SELECT_APP_ID_HOLDER, values: [this.options.appId] },
    );
    const row = result.rows[0];
    return row ? `"${row.application_name}" from ${row.client_addr ?? 'a local socket'}, backend pid ${row.pid}` : 'gone by now';
  }

  async listGrants(): Promise<LockGrant[]> {
    const result = await this.run<LogRow & { held_for_ms: number; lease_left_ms: number }>('getGrants', false, {
      text: SQL.SELECT_GRANTS,
    });
    return result.rows.map((row) => ({
      ...logFields(row),
      heldForMs: row.held_for_ms,
      leaseLeftMs: row.lease_left_ms,
      fencingToken: Number(row.stamp),
    }));
  }

  async listLog(limit: number): Promise<LockLogEntry[]> {
    const result = await this.run<
      LogRow & { status: LockLogStatus; business_done: Date | null; ended: Date | null }
    >('getLog', false, { text: SQL.SELECT_LOG, values: [limit] });
    return result.rows.map((row) => ({
      ...logFields(row),
      status: row.status,
      businessDoneAt: row.business_done,
      endedAt: row.ended,
    }));
  }

  async loadPermits(): Promise<PermitsRow[]> {
    const result = await this.run<{ lock_name: string; mode: string; permits: number }>('refreshLockPermits', false, {
      text: SQL.SELECT_ALL_PERMITS,
    });
    return result.rows.map((row) => ({
      name: row.lock_name,
      mode: row.mode === 'W' ? 'write' : 'read',
      permits: row.permits,
    }));
  }

  async savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void> {
    await this.run('setLockPermits', false, {
      text: permits === null ? SQL.DELETE_PERMITS : SQL.UPSERT_PERMITS,
      values: permits === null ? [name, SQL.MODE_CODE[mode]] : [name, SQL.MODE_CODE[mode], permits],
    });
  }

  /**
   * Runs one statement (on `lane` when given and idle, else on the pool), retrying what is safe to retry with
   * exponential backoff and full jitter: a statement the server rolled back (serialization failure, deadlock, lock
   * timeout), and a connection that could not be had (nothing was sent: the server may be restarting). A connection
   * lost after the statement was sent is never retried: the statement may have committed (`outcomeUnknown` for a
   * statement that grants). Every statement times out on the client after `queryTimeoutMs`; its connection is then
   * destroyed, since the statement may still run on it.
   */
  private async run<R extends QueryResultRow = QueryResultRow>(
    operation: string,
    grants: boolean,
    { lane, ...query }: QueryConfig & { lane?: SessionLane },
  ): Promise<QueryResult<R>> {
    const { maxAttempts, initialDelayMs, maxDelayMs } = this.options.retry;
    const timed = { ...query, query_timeout: this.options.queryTimeoutMs };
    for (let attempt = 1; ; attempt++) {
      let sent = false;
      try {
        return await this.send<R>(lane, timed, () => (sent = true));
      } catch (error) {
        const retry = isTransientDriverError(error) || (!sent && isConnectionFailure(error));
        if (!retry || attempt >= maxAttempts) throw this.telemetry.storeFailed(toLockError(error, operation, grants && sent));
        this.retryCount++;
        await sleep(Math.random() * Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1)));
      }
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
    const client = borrowed ?? (await pool.connect());
    // A checked-out connection has no listener of the pool: a server that ends the session right after the answer
    // (shutdown, terminated backend) would emit an 'error' nobody handles, which crashes the process.
    if (!borrowed) client.on('error', ignore);
    onSent();
    let failure: unknown;
    try {
      return await client.query<R>(query);
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      const broken = failure !== undefined && isConnectionFailure(failure);
      if (borrowed) lane!.giveBack(borrowed, broken);
      else {
        client.off('error', ignore);
        // A broken connection (or one whose statement timed out and may still run) is destroyed, not pooled.
        client.release(broken);
      }
    }
  }

  /**
   * A connection of its own, out of the DataSource's pool, for a session that outlives one statement (the instance
   * lock, and the LISTEN connection once something waits). Two such sessions plus the statements need a pool of at
   * least `MIN_POOL_SIZE`; a smaller one would end in statements waiting forever for a connection.
   */
  private async connect(operation: string): Promise<PoolClient> {
    const pool = this.pool();
    const max = (pool.options as { max?: number }).max ?? 10;
    if (max < MIN_POOL_SIZE) {
      throw new LockConfigurationError(
        `The lock DataSource's pool allows ${max} connection(s); LockModule keeps up to 2 for itself (instance lock, ` +
          `LISTEN) and needs at least ${MIN_POOL_SIZE}: raise \`extra.max\` (or poolSize) of the DataSource`,
      );
    }
    try {
      return await pool.connect();
    } catch (error) {
      throw toLockError(error, operation, false);
    }
  }

  private pool(): Pool {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    if (!this.dataSource.isInitialized || !pool) {
      throw new LockConfigurationError('The lock DataSource is not initialized (or was destroyed)');
    }
    return pool;
  }
}

/** The listener of a connection's errors that its statement reports anyway. */
function ignore(): void {}

function logFields(row: LogRow) {
  return {
    stamp: Number(row.stamp),
    appId: row.app_id,
    instance: row.instance,
    locks: row.lock_names.map((name, i) => ({ name, mode: row.lock_modes[i] === 'W' ? ('write' as const) : ('read' as const) })),
    acquiredAt: row.acquired,
  };
}
