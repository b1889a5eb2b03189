import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { LockConfigurationError } from '../errors/index.js';
import type { LockRequest } from '../interfaces/index.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { LockStore, type PermitsRow } from './lock.store.js';
import { isTransientDriverError, toLockError } from './pg-error.util.js';
import { RequestBatcher } from './request-batcher.util.js';
import * as SQL from './postgres-lock.sql.js';

const MODE_CODE = { read: 'R', write: 'W' } as const;

/** Batches of one process in flight at once, and groups (or stamps) per batch. */
const MAX_BATCHES_IN_FLIGHT = 2;
const MAX_BATCH_SIZE = 32;

/**
 * `LockStore` over the application's TypeORM DataSource (PostgreSQL). The hot path goes straight to the DataSource's
 * own `pg` pool with named prepared statements: one round trip per acquisition and per release. Concurrent calls of
 * this process are coalesced (`RequestBatcher`): under load one round trip and one commit serve many callers.
 * @internal
 */
export class PostgresLockStore extends LockStore {
  private retryCount = 0;
  private readonly acquisitions = new RequestBatcher<readonly LockRequest[], number>(
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

  tryAcquire(group: readonly LockRequest[]): Promise<number> {
    return this.acquisitions.submit(group);
  }

  release(stamp: number): Promise<boolean> {
    return this.releases.submit(stamp);
  }

  private async acquireBatch(groups: readonly (readonly LockRequest[])[]): Promise<number[]> {
    const names: string[] = [];
    const modes: string[] = [];
    const ends: number[] = [];
    for (const group of groups) {
      for (const request of group) {
        names.push(request.name);
        modes.push(MODE_CODE[request.mode]);
      }
      ends.push(names.length);
    }
    const { defaultPermits } = this.options;
    const result = await this.run<{ stamps: string[] }>('tryLocks', true, {
      name: 'nestjs_db_locks_try_acquire',
      text: SQL.TRY_ACQUIRE_GROUPS,
      values: [this.options.appId, names, modes, ends, defaultPermits.read, defaultPermits.write],
    });
    return (result.rows[0]?.stamps ?? []).map(Number);
  }

  private async releaseBatch(stamps: readonly number[]): Promise<boolean[]> {
    const result = await this.run<{ released: string[] }>('releaseLocks', false, {
      name: 'nestjs_db_locks_release',
      text: SQL.RELEASE_GROUPS,
      values: [this.options.appId, stamps, this.options.asyncRelease],
    });
    const released = new Set((result.rows[0]?.released ?? []).map(Number));
    // The same stamp twice in one batch is released once: the second caller gets false, like a second release.
    return stamps.map((stamp) => released.delete(stamp));
  }

  async releaseAll(): Promise<number> {
    const result = await this.run('releaseAllLocks', false, {
      text: SQL.RELEASE_ALL_OF_APP,
      values: [this.options.appId],
    });
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
        if (!isTransientDriverError(error) || attempt >= this.options.retry.maxAttempts) {
          throw toLockError(error, operation, grants);
        }
        this.retryCount++;
        const ceiling = Math.min(this.options.retry.maxDelayMs, this.options.retry.initialDelayMs * 2 ** (attempt - 1));
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
