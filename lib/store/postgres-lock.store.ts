import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';
import type { LockPermits, LockRequest, LockRetryOptions } from '../interfaces/index.js';
import { LockStore, type PermitsRow } from './lock.store.js';
import { isTransientDriverError, toLockError } from './pg-error.util.js';
import * as SQL from './postgres-lock.sql.js';

const MODE_CODE = { read: 'R', write: 'W' } as const;

/**
 * `LockStore` over the application's TypeORM DataSource (PostgreSQL). The hot path goes straight to the DataSource's
 * own `pg` pool with named prepared statements: one round trip per acquisition and per release.
 * @internal
 */
export class PostgresLockStore extends LockStore {
  private retryCount = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly retry: Required<LockRetryOptions>,
    private readonly asyncRelease: boolean,
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

  async tryAcquire(appId: string, group: readonly LockRequest[], defaults: LockPermits): Promise<number> {
    const result = await this.run<{ stamp: string }>('tryLocks', true, {
      name: 'nestjs_db_locks_try_acquire',
      text: SQL.TRY_ACQUIRE_GROUP,
      values: [appId, group.map((r) => r.name), group.map((r) => MODE_CODE[r.mode]), defaults.read, defaults.write],
    });
    return Number(result.rows[0]?.stamp ?? 0);
  }

  async release(appId: string, stamp: number): Promise<boolean> {
    const result = await this.run<{ released: number }>('releaseLocks', false, {
      name: 'nestjs_db_locks_release',
      text: SQL.RELEASE_GROUP,
      values: [appId, stamp, this.asyncRelease],
    });
    return (result.rows[0]?.released ?? 0) > 0;
  }

  async releaseAll(appId: string): Promise<number> {
    const result = await this.run('releaseAllLocks', false, { text: SQL.RELEASE_ALL_OF_APP, values: [appId] });
    return result.rowCount ?? 0;
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

  /** Runs one statement, retrying transient failures with exponential backoff and full jitter. */
  private async run<R extends QueryResultRow = QueryResultRow>(
    operation: string,
    grants: boolean,
    query: QueryConfig,
  ): Promise<QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.pool().query<R>(query);
      } catch (error) {
        if (!isTransientDriverError(error) || attempt >= this.retry.maxAttempts) {
          throw toLockError(error, operation, grants);
        }
        this.retryCount++;
        const ceiling = Math.min(this.retry.maxDelayMs, this.retry.initialDelayMs * 2 ** (attempt - 1));
        await sleep(Math.random() * ceiling);
      }
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
