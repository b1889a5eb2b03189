import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';
import type { LockGrant, LockLogEntry, LockLogStatus, LockRequest } from '../interfaces/index.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import {
  LockStore,
  type BusyLock,
  type InstanceSession,
  type ListenerCallbacks,
  type LockListener,
  type PermitsRow,
} from './lock.store.js';
import { isTransientDriverError, toLockError } from './pg-error.util.js';
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

  async renew(stamps: readonly number[]): Promise<Set<number>> {
    const result = await this.run<{ renewed: string[] }>('renewLeases', false, {
      name: 'nestjs_db_locks_renew',
      text: SQL.RENEW_LEASES,
      values: [this.options.appId, stamps, this.options.leaseMs],
    });
    return new Set((result.rows[0]?.renewed ?? []).map(Number));
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
    return openInstanceSession(await this.connect('claimAppId'), appId, instance, this.hotPath.lane);
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
   * Runs one statement (on `lane` when given and idle, else on the pool), retrying transient failures with
   * exponential backoff and full jitter.
   */
  private async run<R extends QueryResultRow = QueryResultRow>(
    operation: string,
    grants: boolean,
    { lane, ...query }: QueryConfig & { lane?: SessionLane },
  ): Promise<QueryResult<R>> {
    const { maxAttempts, initialDelayMs, maxDelayMs } = this.options.retry;
    for (let attempt = 1; ; attempt++) {
      try {
        const pool = this.pool();
        return await (lane ? lane.query<R>(pool, query) : pool.query<R>(query));
      } catch (error) {
        if (!isTransientDriverError(error) || attempt >= maxAttempts) {
          throw toLockError(error, operation, grants);
        }
        this.retryCount++;
        await sleep(Math.random() * Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1)));
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

function logFields(row: LogRow) {
  return {
    stamp: Number(row.stamp),
    appId: row.app_id,
    instance: row.instance,
    locks: row.lock_names.map((name, i) => ({ name, mode: row.lock_modes[i] === 'W' ? ('write' as const) : ('read' as const) })),
    acquiredAt: row.acquired,
  };
}
