import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';
import type { LockGrant, LockLogEntry, LockLogStatus, LockRequest } from '../interfaces/index.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import {
  LockStore,
  type InstanceSession,
  type ListenerCallbacks,
  type LockListener,
  type PermitsRow,
} from './lock.store.js';
import { isTransientDriverError, toLockError } from './pg-error.util.js';
import * as SQL from './postgres-lock.queries.sql.js';
import { openInstanceSession, openListener } from './postgres-sessions.util.js';
import { RequestBatcher } from './request-batcher.util.js';
import { SessionLane } from './session-lane.util.js';

const MODE_CODE = { read: 'R', write: 'W' } as const;

/** Smallest pool the library works with: two kept sessions, and statements beside them. */
const MIN_POOL_SIZE = 3;

/** Batches of one process in flight at once, and groups (or stamps) per batch. */
const MAX_BATCHES_IN_FLIGHT = 2;
const MAX_BATCH_SIZE = 32;

/** One caller's group in an acquisition batch. */
interface AcquireRequest {
  readonly group: readonly LockRequest[];
  readonly waiter?: string;
}

interface LogRow {
  stamp: string;
  app_id: string;
  instance: string;
  lock_names: string[];
  lock_modes: string[];
  acquired: Date;
}

/**
 * `LockStore` over the application's TypeORM DataSource (PostgreSQL). The hot path goes straight to the DataSource's
 * own `pg` pool with named prepared statements: one round trip per acquisition and per release. Concurrent calls of
 * this process are coalesced (`RequestBatcher`): under load one round trip and one commit serve many callers.
 * @internal
 */
export class PostgresLockStore extends LockStore {
  private retryCount = 0;
  /** The instance session's connection, used by acquisitions and releases while it is idle. */
  private readonly hotLane = new SessionLane();
  private readonly acquisitions = new RequestBatcher<AcquireRequest, number>(
    (groups) => this.acquireBatch(groups),
    MAX_BATCHES_IN_FLIGHT,
    MAX_BATCH_SIZE,
  );
  private readonly releases = new RequestBatcher<number, boolean>(
    (stamps) => this.releaseBatch(stamps),
    MAX_BATCHES_IN_FLIGHT,
    MAX_BATCH_SIZE,
  );

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
  }

  get retries(): number {
    return this.retryCount;
  }

  tryAcquire(group: readonly LockRequest[], waiter?: string): Promise<number> {
    return this.acquisitions.submit({ group, waiter });
  }

  async registerWaiter(waiter: string, group: readonly LockRequest[], ttlMs: number): Promise<void> {
    await this.run('tryLocks', false, {
      text: SQL.REGISTER_WAITER,
      values: [waiter, this.options.appId, group.map((r) => r.name), group.map((r) => MODE_CODE[r.mode]), ttlMs],
    });
  }

  async unregisterWaiter(waiter: string): Promise<void> {
    await this.run('tryLocks', false, { text: SQL.UNREGISTER_WAITER, values: [waiter] });
  }

  release(stamp: number): Promise<boolean> {
    return this.releases.submit(stamp);
  }

  async listen(callbacks: ListenerCallbacks): Promise<LockListener> {
    return openListener(await this.connect('listen'), callbacks);
  }

  private async acquireBatch(requests: readonly AcquireRequest[]): Promise<number[]> {
    const names: string[] = [];
    const modes: string[] = [];
    const ends: number[] = [];
    const waiters: Array<string | null> = [];
    for (const { group, waiter } of requests) {
      for (const request of group) {
        names.push(request.name);
        modes.push(MODE_CODE[request.mode]);
      }
      ends.push(names.length);
      waiters.push(waiter ?? null);
    }
    const { appId, instance, defaultPermits, leaseMs } = this.options;
    const result = await this.run<{ stamps: string[] }>('tryLocks', true, {
      lane: this.hotLane,
      name: 'nestjs_db_locks_try_acquire',
      text: SQL.TRY_ACQUIRE_GROUPS,
      values: [appId, instance, names, modes, ends, waiters, defaultPermits.read, defaultPermits.write, leaseMs],
    });
    return (result.rows[0]?.stamps ?? []).map(Number);
  }

  private async releaseBatch(stamps: readonly number[]): Promise<boolean[]> {
    const result = await this.run<{ released: string[] }>('releaseLocks', false, {
      lane: this.hotLane,
      name: 'nestjs_db_locks_release',
      text: SQL.RELEASE_GROUPS,
      values: [this.options.appId, stamps, this.options.asyncRelease],
    });
    const released = new Set((result.rows[0]?.released ?? []).map(Number));
    // The same stamp twice in one batch is released once: the second caller gets false, like a second release.
    return stamps.map((stamp) => released.delete(stamp));
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
    return openInstanceSession(await this.connect('claimAppId'), appId, instance, this.hotLane);
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
      values: permits === null ? [name, MODE_CODE[mode]] : [name, MODE_CODE[mode], permits],
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
