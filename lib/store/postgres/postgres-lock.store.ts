import type { QueryResult, QueryResultRow } from 'pg';
import { busyLockOf, type BusyRow } from '../lock-rows.util.js';
import type { DataSource, EntityManager } from 'typeorm';
import { LockStoreError } from '../../errors/index.js';
import type { LockRequest } from '../../interfaces/index.js';
import { LockTelemetry } from '../../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../../utils/resolve-lock-options.util.js';
import {
  LockStore,
  type BusyLock,
  type InstanceSession,
  type ListenerCallbacks,
  type LockListener,
  type RenewOutcome,
} from '../lock.store.js';
import { isConnectionFailure, isRowChangedSinceSnapshot, toLockError } from './pg-error.util.js';
import { MODE_CODE } from '../lock-sql.constants.js';
import * as SQL from './postgres-lock.queries.sql.js';
import { SELECT_BUSY_LOCKS } from './postgres-lock-waiting.queries.sql.js';
import { PostgresLockAdminStore } from './postgres-lock-admin.store.js';
import { openInstanceSession, openListener } from './postgres-sessions.util.js';
import { PostgresHotPath } from './postgres-hot-path.js';
import { isolationProblem, type SessionIsolationRow } from './postgres-isolation.util.js';
import { PostgresStatementRunner, type LockStatement } from './postgres-statement.runner.js';
import { PostgresSessionSource } from './postgres-session-source.js';

/**
 * `LockStore` over the application's TypeORM DataSource (PostgreSQL), straight on the DataSource's own `pg` pool. The
 * hot path (acquisitions and releases: batching, scalar twins, the instance session's connection) is
 * `PostgresHotPath`.
 * @internal
 */
export class PostgresLockStore extends LockStore {
  private readonly runner: PostgresStatementRunner;
  private readonly hotPath: PostgresHotPath;
  private readonly sessions: PostgresSessionSource;
  protected readonly reports: PostgresLockAdminStore;

  constructor(
    dataSource: DataSource,
    private readonly options: ResolvedLockOptions,
    private readonly telemetry = new LockTelemetry(),
  ) {
    super();
    this.runner = new PostgresStatementRunner(dataSource, options, (error) => this.telemetry.storeFailed(error));
    this.reports = new PostgresLockAdminStore(this.runner, dataSource);
    this.sessions = new PostgresSessionSource(dataSource, options, this.runner);
    this.hotPath = new PostgresHotPath((operation, grants, query) => this.run(operation, grants, query), options);
  }

  get retries(): number {
    return this.runner.retries;
  }

  override get registersWaiters(): boolean {
    return this.hotPath.handOvers;
  }

  tryAcquire(group: readonly LockRequest[], waiter?: string, leaseMs = this.options.grantLeaseMs): Promise<number> {
    return this.hotPath.tryAcquire(group, waiter, leaseMs);
  }

  async registerWaiter(waiter: string, group: readonly LockRequest[], ttlMs: number): Promise<boolean> {
    const { appId, instance, defaultPermits, grantLeaseMs } = this.options;
    const values = [waiter, appId, group.map((r) => r.name), group.map((r) => MODE_CODE[r.mode]), ttlMs];
    const refreshed = await this.hotPath.withHandOvers(async () => {
      const result = await this.run<{ refreshed: number }>('tryLocks', false, {
        text: SQL.REGISTER_HANDOVER_WAITER,
        values: [...values, instance, defaultPermits.read, defaultPermits.write, grantLeaseMs],
      });
      return (result.rows[0]?.refreshed ?? 0) > 0;
    });
    if (refreshed !== undefined) return refreshed;
    await this.run('tryLocks', false, { text: SQL.REGISTER_WAITER, values });
    return true;
  }

  async unregisterWaiter(waiter: string): Promise<number> {
    const granted = await this.hotPath.withHandOvers(async () => {
      // On the instance session's connection when it is idle, as the attempts that registered the rows: a wait
      // ends on time on a pool the application keeps busy.
      const result = await this.run<{ granted: string | null }>('tryLocks', false, {
        lane: this.hotPath.lane,
        text: SQL.UNREGISTER_HANDOVER_WAITER,
        values: [waiter],
      });
      return Number(result.rows[0]?.granted ?? 0);
    });
    if (granted !== undefined) return granted;
    await this.run('tryLocks', false, { text: SQL.UNREGISTER_WAITER, values: [waiter] });
    return 0;
  }

  async isWaiting(waiter: string): Promise<boolean> {
    const result = await this.run<{ waiting: boolean }>('tryLocks', false, {
      text: SQL.SELECT_WAITER_REGISTERED,
      values: [waiter],
    });
    return result.rows[0]?.waiting === true;
  }

  async busyLocks(group: readonly LockRequest[]): Promise<BusyLock[]> {
    const { read, write } = this.options.defaultPermits;
    const result = await this.run<BusyRow>('tryLocks', false, {
      text: SELECT_BUSY_LOCKS,
      values: [group.map((r) => r.name), group.map((r) => MODE_CODE[r.mode]), read, write],
    });
    return result.rows.map(busyLockOf);
  }

  release(stamp: number): Promise<boolean> {
    return this.hotPath.release(stamp);
  }

  async listen(callbacks: ListenerCallbacks): Promise<LockListener> {
    return openListener(await this.sessions.connect('listen'), callbacks, this.options.tables);
  }

  async recover(): Promise<number> {
    const result = await this.run<{ freed: number }>('releaseAllLocks', false, {
      text: SQL.RECOVER_APP,
      values: [this.options.appId],
    });
    return result.rows[0]?.freed ?? 0;
  }

  async renew(stamps: readonly number[], maxHoldMs = this.options.maxHoldMs): Promise<RenewOutcome> {
    const result = await this.run<{ renewed: string[]; live: string[] }>('renewLeases', false, {
      name: 'nestjs_db_locks_renew_v4',
      text: SQL.RENEW_LEASES,
      values: [this.options.appId, stamps, this.options.leaseMs, maxHoldMs],
    });
    const row = result.rows[0];
    return { renewed: new Set((row?.renewed ?? []).map(Number)), live: new Set((row?.live ?? []).map(Number)) };
  }

  async reap(): Promise<number[]> {
    const result = await this.run<{ reaped: string[] }>('reapStaleLocks', false, {
      text: SQL.REAP_STALE,
      values: [this.options.reaperBatchSize, 0],
    });
    return (result.rows[0]?.reaped ?? []).map(Number);
  }

  async pruneLog(limit: number): Promise<number> {
    if (this.options.logRetentionMs === 0) return 0;
    const result = await this.run('pruneLockLog', false, {
      text: SQL.PRUNE_LOG,
      values: [this.options.logRetentionMs, limit],
    });
    return result.rowCount ?? 0;
  }

  async retireInstances(limit: number): Promise<number> {
    const retention = this.options.instanceRetentionMs;
    if (retention === 0) return 0;
    const candidates = await this.run<{ app_id: string }>('retireInstances', false, {
      text: SQL.SELECT_RETIRABLE_INSTANCES,
      values: [retention, limit],
    });
    let retired = 0;
    for (const { app_id: appId } of candidates.rows) {
      const result = await this.run('retireInstances', false, { text: SQL.RETIRE_INSTANCE, values: [appId, retention] });
      retired += result.rowCount ?? 0;
    }
    return retired;
  }

  async markBusinessDone(stamp: number, manager: EntityManager): Promise<boolean> {
    try {
      const values = [stamp, this.options.appId];
      // TypeORM returns [rows, affected] for an UPDATE on PostgreSQL.
      const marked: unknown = await manager.query(this.runner.sql(SQL.MARK_BUSINESS_DONE), values);
      if (Array.isArray(marked) && marked[1] === 1) return true;
      // Not marked: lost, or a transaction above READ COMMITTED, whose fence is a lock on the grant's lock rows.
      const [row] = (await manager.query(this.runner.sql(SQL.HOLD_GRANT_ROWS), values)) as Array<{ held: number }>;
      return (row?.held ?? 0) > 0;
    } catch (error) {
      // The grant's lock rows were deleted after the transaction's snapshot: it ended meanwhile.
      if (isRowChangedSinceSnapshot(error)) return false;
      throw toLockError(error, 'markBusinessDone', false);
    }
  }

  async claimAppId(): Promise<InstanceSession | undefined> {
    const { appId, instance } = this.options;
    // A pooled connection that the server has just ended (a restart, a terminated backend) fails at once: take
    // another. Retrying is safe: an instance lock taken on a connection that died went with it.
    for (let attempt = 1; ; attempt++) {
      try {
        return await openInstanceSession(
          await this.sessions.connect('claimAppId'),
          appId,
          instance,
          this.hotPath.lane,
          this.options.tables,
        );
      } catch (error) {
        const retry = error instanceof LockStoreError && isConnectionFailure(error.cause);
        if (!retry || attempt >= this.options.retry.maxAttempts) throw this.telemetry.storeFailed(error);
        this.runner.countRetry();
      }
    }
  }

  async recordInstance(processKey: string | null): Promise<string | null | undefined> {
    const { appId, instance } = this.options;
    const previous = await this.run<{ process_key: string | null }>('claimAppId', false, {
      text: SQL.SELECT_INSTANCE_KEY,
      values: [appId],
    });
    await this.run('claimAppId', false, { text: SQL.RECORD_INSTANCE, values: [appId, instance, processKey] });
    return previous.rows.length === 0 ? undefined : (previous.rows[0]?.process_key ?? null);
  }

  /**
   * A transaction pooler without `directUrl`, a `directUrl` that is not a session on the same database (found once),
   * and sessions that do not run READ COMMITTED by default, which every grant refuses (LK001).
   */
  async checkServer(connectWithinMs?: number): Promise<string[]> {
    const problems = await this.sessions.check(connectWithinMs);
    const result = await this.run<SessionIsolationRow>('checkServer', false, { text: SQL.SELECT_SESSION_ISOLATION });
    const isolation = isolationProblem(result.rows[0]);
    return isolation === undefined ? problems : [...problems, isolation];
  }

  async readOnlyReason(): Promise<string | undefined> {
    const result = await this.run<{ read_only: string | null }>('checkServer', false, { text: SQL.SELECT_READ_ONLY });
    return result.rows[0]?.read_only ?? undefined;
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

  /** Runs one statement through the runner (retries, timeout, typed errors). */
  private run<R extends QueryResultRow = QueryResultRow>(
    operation: string,
    grants: boolean,
    statement: LockStatement,
  ): Promise<QueryResult<R>> {
    return this.runner.run<R>(operation, grants, statement);
  }
}
