import type { QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { LockTablesMissingError } from '../../errors/index.js';
import type { LockRequest } from '../../interfaces/index.js';
import type { ResolvedLockOptions } from '../../utils/resolve-lock-options.util.js';
import { sqlStateOf } from './pg-error.util.js';
import { MODE_CODE } from '../lock-sql.constants.js';
import * as SQL from './postgres-lock.queries.sql.js';
import { KeyedRequestBatchers, RequestBatcher } from '../request-batcher.util.js';
import { SessionLane } from './session-lane.util.js';

/** Batches of one process in flight at once, and groups (or stamps) per batch. */
const MAX_BATCHES_IN_FLIGHT = 2;
const MAX_BATCH_SIZE = 32;

/** One caller's group in an acquisition batch. */
interface AcquireRequest {
  readonly group: readonly LockRequest[];
  readonly waiter?: string;
}

/** Runs one statement with the store's retry policy and error mapping (`PostgresLockStore.run`). @internal */
export type StatementRunner = <R extends QueryResultRow>(
  operation: string,
  grants: boolean,
  query: QueryConfig & { lane?: SessionLane },
) => Promise<QueryResult<R>>;

/**
 * The hot path of `PostgresLockStore`: acquisitions and releases, one round trip and one commit each, as named
 * prepared statements.
 * - Concurrent calls of this process are coalesced (`RequestBatcher`): under load one round trip and one commit
 *   serve many callers. Acquisitions are batched by the lease they start with (a leader's grant starts with
 *   `leaseMs`, the others with `grantLeaseMs`).
 * - A batch of one (the common call: one caller, one lock; one stamp) uses the scalar twin of the batch function
 *   (`locking_try_acquire_one`, `locking_release_one`), which decides with the same SQL text for about 12 µs less
 *   server time each (no arrays to parse, no loops).
 * - Statements go on the instance session's connection while it is idle (`lane`), else on the pool.
 * @internal
 */
export class PostgresHotPath {
  /** The instance session's connection, attached while that session lives. */
  readonly lane = new SessionLane();
  /**
   * False once the database answered that the scalar twins do not exist: the schema is at the first migration (the
   * second has not run yet). The batch functions of every version serve the same calls, a little slower, until the
   * instance restarts.
   */
  private scalarTwins = true;
  /**
   * False once the database answered that the hand-over's schema is missing (`LockHandOver1797300000000` has not
   * run): waiters then register with their own statement, take their grants themselves and are never handed one,
   * until the instance restarts.
   */
  handOvers = true;
  private readonly acquisitions = new KeyedRequestBatchers<number, AcquireRequest, number>(
    (leaseMs, groups) => this.acquireBatch(leaseMs, groups),
    MAX_BATCHES_IN_FLIGHT,
    MAX_BATCH_SIZE,
  );
  private readonly releases = new RequestBatcher<number, boolean>(
    (stamps) => this.releaseBatch(stamps),
    MAX_BATCHES_IN_FLIGHT,
    MAX_BATCH_SIZE,
  );

  constructor(
    private readonly run: StatementRunner,
    private readonly options: ResolvedLockOptions,
  ) {}

  /** The group's stamp, or 0 when some lock is not available; its lease starts with `leaseMs`. */
  tryAcquire(group: readonly LockRequest[], waiter: string | undefined, leaseMs: number): Promise<number> {
    return this.acquisitions.submit(leaseMs, { group, waiter });
  }

  /** Whether `stamp` matched a live grant of this app (now released). */
  release(stamp: number): Promise<boolean> {
    return this.releases.submit(stamp);
  }

  private async acquireBatch(leaseMs: number, requests: readonly AcquireRequest[]): Promise<number[]> {
    if (this.handOvers && requests.some((request) => request.waiter !== undefined)) {
      const stamps = await this.withHandOvers(() => this.waitBatch(leaseMs, requests));
      if (stamps !== undefined) return stamps;
    }
    const { appId, instance, defaultPermits } = this.options;
    const [only] = requests;
    const lock = only?.group[0];
    if (requests.length === 1 && only?.group.length === 1 && lock) {
      const stamp = await this.withScalarTwin(async () => {
        const result = await this.run<{ stamp: string }>('tryLocks', true, {
          lane: this.lane,
          name: 'nestjs_db_locks_try_acquire_one',
          text: SQL.TRY_ACQUIRE_ONE,
          values: [
            appId,
            instance,
            lock.name,
            MODE_CODE[lock.mode],
            only.waiter ?? null,
            defaultPermits.read,
            defaultPermits.write,
            leaseMs,
          ],
        });
        return Number(result.rows[0]?.stamp ?? 0);
      });
      if (stamp !== undefined) return [stamp];
    }
    const { names, modes, ends, waiters } = flatten(requests);
    const result = await this.run<{ stamps: string[] }>('tryLocks', true, {
      lane: this.lane,
      name: 'nestjs_db_locks_try_acquire',
      text: SQL.TRY_ACQUIRE_GROUPS,
      values: [appId, instance, names, modes, ends, waiters, defaultPermits.read, defaultPermits.write, leaseMs],
    });
    return (result.rows[0]?.stamps ?? []).map(Number);
  }

  /**
   * A batch with waiters (WAIT_IN_ONE_ROUND_TRIP): the same decisions as `acquireBatch`'s functions, and a refused
   * waiter's rows registered or refreshed for `waiterTtlMs` (the waiter's own time to live) in the same statement.
   */
  private async waitBatch(leaseMs: number, requests: readonly AcquireRequest[]): Promise<number[]> {
    const { appId, instance, defaultPermits, waiterTtlMs: ttlMs } = this.options;
    const [only] = requests;
    const lock = only?.group[0];
    if (requests.length === 1 && only?.group.length === 1 && lock) {
      const result = await this.run<{ stamp: string }>('tryLocks', true, {
        lane: this.lane,
        name: 'nestjs_db_locks_wait_acquire_one',
        text: SQL.WAIT_ACQUIRE_ONE,
        values: [
          appId,
          instance,
          lock.name,
          MODE_CODE[lock.mode],
          only.waiter ?? null,
          defaultPermits.read,
          defaultPermits.write,
          leaseMs,
          ttlMs,
        ],
      });
      return [Number(result.rows[0]?.stamp ?? 0)];
    }
    const { names, modes, ends, waiters } = flatten(requests);
    const result = await this.run<{ stamps: string[] }>('tryLocks', true, {
      lane: this.lane,
      name: 'nestjs_db_locks_wait_acquire',
      text: SQL.WAIT_ACQUIRE_GROUPS,
      values: [appId, instance, names, modes, ends, waiters, defaultPermits.read, defaultPermits.write, leaseMs, ttlMs],
    });
    return (result.rows[0]?.stamps ?? []).map(Number);
  }

  /** Runs `call` with the hand-over's schema; undefined when it is missing (42883 or 42703: see `handOvers`). */
  async withHandOvers<T>(call: () => Promise<T>): Promise<T | undefined> {
    if (!this.handOvers) return undefined;
    try {
      return await call();
    } catch (error) {
      // The call failed before it ran (no such function or column): the previous schema's statements may take it over.
      const code = error instanceof LockTablesMissingError ? sqlStateOf(error.cause) : undefined;
      if (code !== '42883' && code !== '42703') throw error;
      this.handOvers = false;
      return undefined;
    }
  }

  private async releaseBatch(stamps: readonly number[]): Promise<boolean[]> {
    const { appId, asyncRelease } = this.options;
    if (stamps.length === 1) {
      const released = await this.withScalarTwin(async () => {
        const result = await this.run<{ released: boolean }>('releaseLocks', false, {
          lane: this.lane,
          name: 'nestjs_db_locks_release_one',
          text: SQL.RELEASE_ONE,
          values: [appId, stamps[0], asyncRelease],
        });
        return result.rows[0]?.released === true;
      });
      if (released !== undefined) return [released];
    }
    const result = await this.run<{ released: string[] }>('releaseLocks', false, {
      lane: this.lane,
      name: 'nestjs_db_locks_release',
      text: SQL.RELEASE_GROUPS,
      values: [appId, stamps, asyncRelease],
    });
    const released = new Set((result.rows[0]?.released ?? []).map(Number));
    // The same stamp twice in one batch is released once: the second caller gets false, like a second release.
    return stamps.map((stamp) => released.delete(stamp));
  }

  /** Runs `call` on a scalar twin; undefined when the twins do not exist (then the batch function serves). */
  private async withScalarTwin<T>(call: () => Promise<T>): Promise<T | undefined> {
    if (!this.scalarTwins) return undefined;
    try {
      return await call();
    } catch (error) {
      // 42883: no such function. The call failed before it ran, so the batch function may take it over.
      if (!(error instanceof LockTablesMissingError) || sqlStateOf(error.cause) !== '42883') throw error;
      this.scalarTwins = false;
      return undefined;
    }
  }
}

/** The groups of a batch as the batch functions take them: all names and modes in a row, each group's end, its waiter. */
function flatten(requests: readonly AcquireRequest[]) {
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
  return { names, modes, ends, waiters };
}
