import { setTimeout as sleep } from 'node:timers/promises';
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
import { compareLockNames } from '../../utils/lock-name.util.js';
import { isMissingMysqlColumn, isMissingMysqlProcedure, isMysqlConnectionFailure, toMysqlLockError } from './mysql-error.util.js';
import { MysqlAcquisitions, PROCEDURES_RECHECK_MS } from './mysql-acquisitions.js';
import { busyLockOf, type BusyRow } from '../lock-rows.util.js';
import { MysqlLockAdminStore } from './mysql-lock-admin.store.js';
import * as LEASE from './mysql-app-id-lease.queries.sql.js';
import * as SQL from './mysql-lock.queries.sql.js';
import { MysqlDoorbellRinger } from './mysql-doorbell.ringer.js';
import { deleteHandedWaiters, MysqlHandedGrants, MysqlHandOvers } from './mysql-hand-overs.js';
import { MysqlReleases } from './mysql-releases.js';
import { MysqlWakeups, openMysqlInstanceSession, openMysqlListener } from './mysql-sessions.util.js';
import { MysqlStatementRunner, type MysqlTransaction } from './mysql-statement.runner.js';
import { MODE_CODE } from '../lock-sql.constants.js';

export { PROCEDURES_RECHECK_MS };

/** A row of `SQL.checkGroup`. */
interface CheckRow {
  name: string;
  mode: 'R' | 'W';
  same_mode: number | string;
  other_mode: number | string;
  permits: number | string | null;
  writer_first: number | string | null;
}

/** How many name rows one reaper run prunes at most. */
const NAMES_PRUNED_PER_RUN = 1000;

/** How often the refused attempts of this process's waiters reap stale grants at most (ms). */
const LAPSED_REAP_MS = 250;

/**
 * `LockStore` over the application's TypeORM DataSource on MySQL 8.0+ or MariaDB 10.6+ (InnoDB), straight on the
 * DataSource's own `mysql2` pool. Each operation is one short transaction at READ COMMITTED. A grant locks its names'
 * rows in `locking_names` in sorted order (the per-name mutex), then reads the held rows and the permits, then writes
 * its log row (whose `AUTO_INCREMENT` id is the stamp) and its lock rows, and commits: a grant is durable when
 * `tryLocks` answers (with InnoDB's default `innodb_flush_log_at_trx_commit = 1`). A grant and a release are one call
 * of a stored procedure each (`lib/migrations/sql/mysql-lock.procedures*.sql.ts`; concurrent grants of this process
 * are batched into one call: `MysqlAcquisitions`), or the same statements one by one where the procedures' migration
 * has not run.
 * @internal
 */
export class MysqlLockStore extends LockStore {
  private readonly runner: MysqlStatementRunner;
  protected readonly reports: MysqlLockAdminStore;
  /** Names freed by this process, for its own waiters (also those freed by its admin service). */
  readonly wakeups = new MysqlWakeups();
  /** Grants: batched, each as one call of a procedure of the latest version the database has. */
  readonly acquisitions: MysqlAcquisitions;
  /** Wakes the waiters of other instances that a release named (their doorbells). */
  readonly ringer: MysqlDoorbellRinger;
  /** Releases, and the names of this process's live grants that they free. */
  readonly releases: MysqlReleases;
  /** Whether the database has the hand-over's waiter columns. */
  private readonly handOvers = new MysqlHandOvers();
  /** Grants handed to this process's waiters, claimed by their next attempt when their wait could not take them. */
  private readonly handedGrants: MysqlHandedGrants;
  /** Lease holders of this app id on other nodes of a Galera cluster seen alive (see `openMysqlInstanceSession`). */
  private readonly liveLeaseHolders = new Map<string, number>();
  /** When the refused attempts of a waiter last reaped stale grants (monotonic ms). */
  private lastRefusalReap = -Infinity;
  /** Until when the statements of a grant write its names' rows back unchanged (`grants` found missing; monotonic ms). */
  private namesUncountedUntil = 0;

  constructor(
    dataSource: DataSource,
    private readonly options: ResolvedLockOptions,
    private readonly telemetry = new LockTelemetry(),
  ) {
    super();
    this.runner = new MysqlStatementRunner(dataSource, options, (error) => this.telemetry.storeFailed(error));
    this.reports = new MysqlLockAdminStore(this.runner, dataSource, this.wakeups);
    this.acquisitions = new MysqlAcquisitions(this.runner, options, (group, waiter, leaseMs) =>
      this.tryAcquireStatements(group, waiter, leaseMs),
    );
    this.ringer = new MysqlDoorbellRinger(this.runner);
    this.releases = new MysqlReleases(this.runner, options, this.acquisitions, this.wakeups, this.ringer);
    this.handedGrants = new MysqlHandedGrants(this.runner, options.appId, options.waiterTtlMs);
  }

  get retries(): number {
    return this.runner.retries;
  }

  /**
   * The group's stamp, or 0 when some lock is not available, or when the grant was rolled back at each of its tries by
   * a conflict over its names' rows (1213): on a Galera cluster, grants of the same names certified first on other
   * nodes, so the names are busy now (nothing was granted).
   */
  async tryAcquire(group: readonly LockRequest[], waiter?: string, leaseMs = this.options.grantLeaseMs): Promise<number> {
    const claim = waiter === undefined ? undefined : await this.handedGrants.claim(waiter, leaseMs);
    if (claim !== undefined && claim.stamp > 0) {
      this.releases.granted(claim.stamp, group);
      return claim.stamp;
    }
    if (claim !== undefined && claim.freed.length > 0) this.wakeups.freed(claim.freed);
    let stamp: number;
    try {
      stamp = await this.acquisitions.tryAcquire(group, waiter, leaseMs);
    } catch (error) {
      if (!(error instanceof LockStoreError) || error.code !== 'ER_LOCK_DEADLOCK' || error.outcomeUnknown) throw error;
      return 0;
    }
    this.releases.granted(stamp, group);
    if (stamp === 0 && waiter !== undefined) this.reapAfterRefusal();
    return stamp;
  }

  /**
   * The grant of `tryAcquire` sent statement by statement (a database without the procedures' migration, or a
   * procedure being replaced), counting the grant in its names' rows; on a database before that column's migration
   * (it is missing: errno 1054), writing them back unchanged, and so for `PROCEDURES_RECHECK_MS`.
   */
  private async tryAcquireStatements(group: readonly LockRequest[], waiter: string | undefined, leaseMs: number): Promise<number> {
    const counted = performance.now() >= this.namesUncountedUntil;
    try {
      return await this.grantStatements(group, waiter, leaseMs, counted);
    } catch (error) {
      if (!counted || !isMissingMysqlColumn(error)) throw error;
      this.namesUncountedUntil = performance.now() + PROCEDURES_RECHECK_MS;
      return this.grantStatements(group, waiter, leaseMs, false);
    }
  }

  private grantStatements(group: readonly LockRequest[], waiter: string | undefined, leaseMs: number, counted: boolean): Promise<number> {
    const { appId, instance } = this.options;
    return this.runner.transaction('tryLocks', true, async (tx) => {
      // On a Galera cluster a group busy now is refused on committed rows, without writing its names' rows (each such
      // write conflicts, at certification, with every other grant of those names on the other nodes).
      if (this.acquisitions.galera && (await this.busy(tx, group, waiter))) return 0;
      // Sorted: every grant locks shared names in the same order (no deadlock between two of them).
      const names = [...new Set(group.map((r) => r.name))].sort(compareLockNames);
      await tx.write(SQL.lockNames(names.length, counted), names);
      if (await this.busy(tx, group, waiter)) {
        tx.rollBackAtEnd(); // nothing granted: the names' rows were written only to decide
        return 0;
      }
      const modes = group.map((r) => MODE_CODE[r.mode]);
      const { insertId: stamp } = await tx.write(SQL.INSERT_GRANT_LOG, [
        appId,
        instance,
        JSON.stringify(group.map((r) => r.name)),
        JSON.stringify(modes),
        leaseMs,
      ]);
      await tx.write(
        SQL.insertLocks(group.length),
        group.flatMap((r, i) => [r.name, modes[i], appId, stamp]),
      );
      if (waiter !== undefined) await tx.write(SQL.DELETE_WAITER, [waiter]);
      return stamp;
    });
  }

  /** Whether some lock of the group is not available (read under the names' row locks). */
  private async busy(tx: MysqlTransaction, group: readonly LockRequest[], waiter: string | undefined): Promise<boolean> {
    const { read, write } = this.options.defaultPermits;
    const rows = await tx.select<CheckRow>(SQL.checkGroup(group.length), [
      waiter ?? null,
      ...group.flatMap((r) => [r.name, MODE_CODE[r.mode]]),
    ]);
    return rows.some((row) => {
      const permits = row.permits === null ? (row.mode === 'W' ? write : read) : Number(row.permits);
      return Number(row.other_mode) > 0 || Number(row.same_mode) >= permits || Number(row.writer_first) === 1;
    });
  }

  /**
   * Registers or refreshes the waiter's rows, with the hand-over's columns where the database has them (a release may
   * then hand the waiter a grant: false once it has, read after the refresh, which left the rows' end as it was).
   */
  async registerWaiter(waiter: string, group: readonly LockRequest[], ttlMs: number): Promise<boolean> {
    const { appId, instance } = this.options;
    const refreshed = await this.handOvers.with(async () => {
      await this.runner.write(
        'tryLocks',
        SQL.registerHandOverWaiter(group.length),
        [...group.flatMap((r) => [r.name, waiter, MODE_CODE[r.mode], appId, instance, ttlMs]), ttlMs],
      );
      const [row] = await this.runner.select<{ handed: number | string }>('tryLocks', SQL.SELECT_WAITER_HANDED, [waiter]);
      return Number(row?.handed ?? 0) === 0;
    });
    if (refreshed === undefined) {
      await this.runner.write(
        'tryLocks',
        SQL.registerWaiter(group.length),
        [...group.flatMap((r) => [r.name, waiter, MODE_CODE[r.mode], appId, ttlMs]), ttlMs],
      );
    }
    this.wakeups.onWaiterRegistered();
    return refreshed ?? true;
  }

  /** Removes the waiter's rows, and answers the grant a release handed it meanwhile (read under their row locks). */
  async unregisterWaiter(waiter: string): Promise<number> {
    this.handedGrants.forgetWaiter(waiter);
    const granted = await this.handOvers.with(() =>
      this.runner.transaction('tryLocks', false, async (tx) => {
        const [row] = await tx.select<{ granted: number | string | null }>(SQL.SELECT_WAITER_GRANT, [waiter]);
        await tx.write(SQL.DELETE_WAITER, [waiter]);
        return Number(row?.granted ?? 0);
      }),
    );
    if (granted !== undefined) return granted;
    await this.runner.write('tryLocks', SQL.DELETE_WAITER, [waiter]);
    return 0;
  }

  async isWaiting(waiter: string): Promise<boolean> {
    const rows = await this.runner.select<{ waiting: number }>('tryLocks', SQL.SELECT_WAITER_REGISTERED, [waiter]);
    return Number(rows[0]?.waiting) === 1;
  }

  async busyLocks(group: readonly LockRequest[]): Promise<BusyLock[]> {
    const { read, write } = this.options.defaultPermits;
    const rows = await this.runner.select<BusyRow>(
      'tryLocks',
      SQL.selectBusyLocks(group.length),
      [write, read, ...group.flatMap((r) => [r.name, MODE_CODE[r.mode]])],
    );
    return rows.map(busyLockOf);
  }

  async listen(callbacks: ListenerCallbacks): Promise<LockListener> {
    // The listener polls on pool connections: one poll first, so that a database that does not answer is a failure to
    // listen (tried again with back-off), not a listener lost at its first poll and opened again at once, in a loop.
    try {
      await this.runner.onConnection((tx) => tx.select(SQL.SELECT_WAITED_NAMES, [this.options.appId]));
    } catch (error) {
      throw toMysqlLockError(error, 'listen', false);
    }
    const heard: ListenerCallbacks = {
      ...callbacks,
      handedOver: (waiter, stamp, rowsEndMs) => {
        this.handedGrants.handed(waiter, stamp);
        callbacks.handedOver(waiter, stamp, rowsEndMs);
      },
    };
    return openMysqlListener(this.runner, this.options.appId, this.wakeups, heard, this.options.queryTimeoutMs, this.handOvers);
  }

  release(stamp: number): Promise<boolean> {
    this.handedGrants.forgetStamps([stamp]);
    return this.releases.release(stamp);
  }

  async recover(): Promise<number> {
    const freed = await this.runner.transaction('releaseAllLocks', false, async (tx) => {
      const stamps = (await tx.select<{ stamp: string }>(SQL.SELECT_APP_STAMPS, [this.options.appId])).map((row) =>
        Number(row.stamp),
      );
      await tx.write(SQL.DELETE_APP_WAITERS, [this.options.appId]);
      if (stamps.length === 0) return { names: [], rows: 0 };
      await tx.write(SQL.endGrants('RECOVERED', stamps.length), stamps);
      const names = await tx.select<{ lock_name: string }>(SQL.selectNamesOf(stamps.length), stamps);
      const { affectedRows } = await tx.write(SQL.DELETE_APP_LOCKS, [this.options.appId]);
      return { names: names.map((row) => row.lock_name), rows: affectedRows };
    });
    this.releases.forgetAll();
    this.handedGrants.forgetAll();
    this.wakeups.freed(freed.names);
    return freed.rows;
  }

  async renew(stamps: readonly number[], maxHoldMs = this.options.maxHoldMs): Promise<RenewOutcome> {
    const { appId, leaseMs } = this.options;
    if (stamps.length === 0) return { renewed: new Set(), live: new Set() };
    const outcome = await this.runner.transaction('renewLeases', false, async (tx) => {
      const live = await tx.select<{ stamp: string }>(SQL.selectLiveStamps(stamps.length, false), [...stamps, appId]);
      // A row locked by another transaction (a business transaction after markBusinessDone, a release or a reap in
      // progress) is skipped, never waited for: one long business transaction must not hold up the other renewals.
      const unlocked = (
        await tx.select<{ stamp: string }>(SQL.selectLiveStamps(stamps.length, true), [...stamps, appId])
      ).map((row) => Number(row.stamp));
      if (unlocked.length > 0) await tx.write(SQL.renewLeases(unlocked.length), [maxHoldMs, leaseMs, maxHoldMs, leaseMs, ...unlocked]);
      return { renewed: new Set(unlocked), live: new Set(live.map((row) => Number(row.stamp))) };
    });
    // A grant no longer live (reaped by another instance, forced) is never released: its names are forgotten.
    const ended = stamps.filter((stamp) => !outcome.live.has(stamp));
    this.releases.forget(ended);
    this.handedGrants.forgetStamps(ended);
    return outcome;
  }

  async reap(): Promise<number[]> {
    const stamps = await this.reapStale();
    await this.runner.write('reapStaleLocks', SQL.PRUNE_NAMES, [NAMES_PRUNED_PER_RUN]);
    return stamps;
  }

  /**
   * After a waiter's refused attempt, at most every `LAPSED_REAP_MS`: the stale grants reaped, off the caller's path.
   * A release may hand a name to a waiter that is gone (killed, frozen); that grant's lease ends with the waiter's
   * rows, seconds at most, and the waiters still queued then free the name without waiting for a reaper's interval.
   */
  private reapAfterRefusal(): void {
    const now = performance.now();
    if (now - this.lastRefusalReap < LAPSED_REAP_MS) return;
    this.lastRefusalReap = now;
    void this.reapStale().catch(() => undefined);
  }

  /** Frees one batch of stale grants (any app); their stamps. */
  private async reapStale(): Promise<number[]> {
    const { reaperBatchSize } = this.options;
    const reaped = await this.runner.transaction('reapStaleLocks', false, async (tx) => {
      const candidates = (await tx.select<{ stamp: string }>(SQL.SELECT_STALE, [reaperBatchSize])).map((row) => row.stamp);
      const stamps =
        candidates.length === 0
          ? []
          : (await tx.select<{ stamp: string }>(SQL.lockStale(candidates.length), candidates)).map((row) => Number(row.stamp));
      await tx.write(SQL.DELETE_EXPIRED_WAITERS);
      if (stamps.length === 0) return { stamps, names: [] as string[] };
      await tx.write(SQL.endGrants('REAPED', stamps.length), stamps);
      const names = await tx.select<{ lock_name: string }>(SQL.selectNamesOf(stamps.length), stamps);
      await tx.write(SQL.deleteLocksOf(stamps.length), stamps);
      await deleteHandedWaiters(tx, stamps);
      return { stamps, names: names.map((row) => row.lock_name) };
    });
    this.releases.forget(reaped.stamps);
    this.handedGrants.forgetStamps(reaped.stamps);
    this.wakeups.freed(reaped.names);
    return reaped.stamps;
  }

  async pruneLog(limit: number): Promise<number> {
    const retention = this.options.logRetentionMs;
    if (retention === 0) return 0;
    const { affectedRows } = await this.runner.write('pruneLockLog', SQL.PRUNE_LOG, [retention, retention, limit]);
    return affectedRows;
  }

  async retireInstances(limit: number): Promise<number> {
    const retention = this.options.instanceRetentionMs;
    if (retention === 0) return 0;
    const candidates = await this.runner.select<{ app_id: string }>('retireInstances', SQL.SELECT_RETIRABLE_INSTANCES, [
      retention,
      limit,
    ]);
    let retired = 0;
    for (const { app_id: appId } of candidates) {
      const { affectedRows } = await this.runner.write('retireInstances', SQL.RETIRE_INSTANCE, [appId, retention, appId]);
      retired += affectedRows;
    }
    return retired;
  }

  async markBusinessDone(stamp: number, manager: EntityManager): Promise<boolean> {
    try {
      const result: unknown = await manager.query(this.runner.sql(SQL.MARK_BUSINESS_DONE), [stamp, this.options.appId]);
      return (result as { affectedRows?: number } | null)?.affectedRows === 1;
    } catch (error) {
      throw toMysqlLockError(error, 'markBusinessDone', false);
    }
  }

  async claimAppId(): Promise<InstanceSession | undefined> {
    // A pooled connection that the server has just closed fails at once: take another. Retrying is safe: an
    // instance lock taken on a connection that died went with it.
    for (let attempt = 1; ; attempt++) {
      try {
        return await openMysqlInstanceSession(await this.runner.connect('claimAppId'), this.runner, {
          ...this.options,
          liveHolders: this.liveLeaseHolders,
          onCluster: (galera) => {
            this.acquisitions.galera = galera;
            this.releases.galera = galera;
          },
        });
      } catch (error) {
        const retry = error instanceof LockStoreError && isMysqlConnectionFailure(error.cause);
        if (!retry || attempt >= this.options.retry.maxAttempts) throw this.telemetry.storeFailed(error);
        this.runner.countRetry();
      }
    }
  }

  async recordInstance(processKey: string | null): Promise<string | null | undefined> {
    const { appId, instance } = this.options;
    const previous = await this.runner.select<{ process_key: string | null }>('claimAppId', SQL.SELECT_INSTANCE_KEY, [appId]);
    await this.runner.write('claimAppId', SQL.RECORD_INSTANCE, [appId, instance, processKey, instance, processKey]);
    return previous.length === 0 ? undefined : (previous[0]?.process_key ?? null);
  }

  async checkServer(): Promise<string[]> {
    const problems: string[] = [];
    const [binlog] = await this.runner.select<{ log_bin: number | string; binlog_format: string }>('claimAppId', SQL.SELECT_BINLOG);
    if (Number(binlog?.log_bin) === 1 && String(binlog?.binlog_format).toUpperCase() === 'STATEMENT') {
      problems.push(
        'The server logs statements (binlog_format = STATEMENT): InnoDB cannot log the lock tables\' READ COMMITTED ' +
          'writes that way (error 1665). Set binlog_format = ROW (or MIXED) on the server, or for the lock user.',
      );
      return problems; // the probe below would fail the same way
    }
    try {
      await this.runner.call('claimAppId', false, SQL.PROBE_PROCEDURES, []);
    } catch (error) {
      if (isMissingMysqlProcedure(error)) return problems; // not migrated yet: statements are sent one by one
      if ((error as LockStoreError).code !== 'ER_PROCACCESS_DENIED_ERROR') throw error;
      problems.push(
        'The lock user may not run the lock procedures (locking_try_acquire, locking_release): grant it EXECUTE on ' +
          'the database (GRANT EXECUTE ON <database>.* TO <user>).',
      );
    }
    return problems;
  }

  async readOnlyReason(): Promise<string | undefined> {
    const [row] = await this.runner.select<{ read_only: string | null }>('checkServer', SQL.SELECT_READ_ONLY);
    return row?.read_only ?? undefined;
  }

  async appIdHolderPid(): Promise<number | undefined> {
    const [row] = await this.runner.select<{ pid: number | string | null }>('claimAppId', SQL.SELECT_APP_ID_HOLDER_PID, [
      this.options.appId,
    ]);
    return row?.pid === null || row?.pid === undefined ? undefined : Number(row.pid);
  }

  async endStaleClaim(pid: number): Promise<void> {
    if ((await this.appIdHolderPid()) !== pid) return;
    // KILL takes no parameter placeholder: `pid` is a number read from the server.
    await this.runner.write('claimAppId', `KILL CONNECTION ${Math.trunc(pid)}`).catch((error: unknown) => {
      // 1094: no such thread (it ended meanwhile).
      if ((error as LockStoreError).code !== 'ER_NO_SUCH_THREAD') throw error;
    });
    for (let waited = 0; waited < 1000 && (await this.appIdHolderPid()) === pid; waited += 50) await sleep(50);
  }

  async describeAppIdHolder(): Promise<string> {
    const [row] = await this.runner.select<{ pid: number | string; user: string; host: string }>(
      'claimAppId',
      SQL.SELECT_APP_ID_HOLDER,
      [this.options.appId],
    );
    if (row) return `user "${row.user}" from ${row.host}, connection id ${row.pid}`;
    // On a Galera cluster the holder may be on another node: its lease says who.
    const [lease] = await this.runner
      .select<{ lease_holder: string | null; instance: string; left_ms: number | string | null }>('claimAppId', LEASE.SELECT_LEASE_HOLDER, [
        this.options.appId,
      ])
      .catch(() => []);
    if (lease?.lease_holder && Number(lease.left_ms) > 0) {
      return `instance "${lease.instance}" on another node of the cluster (its lease has ${Math.round(Number(lease.left_ms))} ms left)`;
    }
    return 'gone by now';
  }
}
