import { hostname } from 'node:os';
import { Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { GrantNotFoundError, InvalidLockArgumentError, JobNotFoundError, LockConfigurationError } from '../errors/index.js';
import type {
  ForcedRelease,
  LockAdminOptions,
  LockGaleraNode,
  LockGrant,
  LockGrantFilter,
  LockJobAction,
  LockJobActionKind,
  LockJobControl,
  LockJobInfo,
  LockJobRun,
  LockJobRunQuery,
  LockLeaderFilter,
  LockLeaderInfo,
  LockLogEntry,
  LockLogQuery,
  LockMode,
  LockPermitsEntry,
  LockSchemaStatus,
  LockWaiterInfo,
} from '../interfaces/index.js';
import { assertLeaderRole } from '../leader/leader-role.util.js';
import { lockMigrations } from '../migrations/lock-migrations.factory.js';
import type { JobRunStore } from '../store/job-runs.store.js';
import type { LockAdminStore } from '../store/lock-admin.store.js';
import { createJobRunStore, createLockAdminStore } from '../store/lock-stores.factory.js';
import { lockDialectOf } from '../store/lock-dialect.util.js';
import { DEFAULT_LOCK_TABLES, type LockTables, resolveLockTables } from '../store/lock-tables.util.js';
import {
  assertGrantFilter,
  assertLimit,
  assertLockMode,
  assertLockName,
  assertPermits,
  assertStamp,
} from '../utils/lock-validation.util.js';
import { assertJobControl } from '../utils/job-control-validation.util.js';
import { resolveLockOptions } from '../utils/resolve-lock-options.util.js';

/** Longest reason a forced release records. */
const MAX_REASON_LENGTH = 500;

/**
 * What the people on call do to the locks of every instance: see the grants, the waiters, the log and the permits,
 * change permits, and free a stuck grant. `LockModule` provides it (over its DataSource, acting as the module's
 * `instance`); scripts and the command line make one with `LockAdminService.create(dataSource)`, without a Nest
 * application.
 *
 * A forced release is the one way to free another instance's grant: it is explicit, needs a reason, and the log
 * records who did it and why (status `FORCED`). Every method validates its input before touching the database and
 * throws a typed `LockError` on failure.
 * @publicApi
 */
@Injectable()
export class LockAdminService {
  /** @internal `LockModule` provides the service; outside Nest, use `LockAdminService.create`. */
  constructor(
    private readonly store: LockAdminStore,
    /** Who acts: recorded as `endedBy` in the log of every forced release. */
    readonly actor: string,
    private readonly jobRuns?: JobRunStore,
    private readonly tables: LockTables = DEFAULT_LOCK_TABLES,
  ) {}

  /**
   * An admin service over any initialized TypeORM DataSource (PostgreSQL, MySQL or MariaDB) holding the lock tables,
   * for scripts and the command line. Its statements use the DataSource's pool.
   * @throws LockConfigurationError for a DataSource of another database, or a bad option.
   */
  static create(dataSource: DataSource, options: LockAdminOptions = {}): LockAdminService {
    const actor = options.actor ?? `${hostname()}:${process.pid}`;
    if (typeof actor !== 'string' || actor.length < 1 || actor.length > 200) {
      throw new LockConfigurationError(`LockAdminService option actor must be 1-200 characters (got ${String(actor)})`);
    }
    const tables = resolveLockTables(options, lockDialectOf(dataSource), 'LockAdminService option');
    const { queryTimeoutMs } = options;
    const resolved = resolveLockOptions({ appId: 'lock-admin', instance: actor, queryTimeoutMs }, tables);
    return new LockAdminService(
      createLockAdminStore(dataSource, resolved),
      actor,
      createJobRunStore(dataSource, resolved),
      tables,
    );
  }

  /**
   * Frees the live grant `stamp`, whatever instance holds it, and records in the log who did it (`actor`) and why
   * (status `FORCED`). The waiters of its names are woken. Its holder learns it on its next lease renewal: its signal
   * fires with `LockLostError` and `isHeld` turns false; `markBusinessDone` then throws `LockLostError` and
   * `releaseLocks` throws `IllegalMonitorStateError`. Until that renewal the holder may still believe it holds the
   * locks: free a grant whose holder is alive only when you know its work is stuck or harmless.
   * @param reason why, recorded in the log: 1–500 characters.
   * @returns what was freed.
   * @throws InvalidLockArgumentError for a bad stamp or reason, before any database call.
   * @throws GrantNotFoundError when no live grant has that stamp (nothing is changed).
   */
  async forceRelease(stamp: number, reason: string): Promise<ForcedRelease> {
    assertStamp(stamp);
    if (typeof reason !== 'string' || reason.trim().length === 0 || reason.length > MAX_REASON_LENGTH) {
      throw new InvalidLockArgumentError('reason', reason, `a non-empty text of at most ${MAX_REASON_LENGTH} characters`);
    }
    const freed = await this.store.forceRelease(stamp, this.actor, reason);
    if (!freed) throw new GrantNotFoundError(stamp);
    return { stamp, ...freed, forcedBy: this.actor, reason };
  }

  /**
   * The callers waiting for a group now (`tryLocks` with `waitMs`), of every instance, in waiting order.
   * @param filter `name`: only those waiting for that lock name.
   */
  listWaiters(filter: { readonly name?: string } = {}): Promise<LockWaiterInfo[]> {
    const { name } = assertGrantFilter(filter);
    return this.store.listWaiters(name);
  }

  /**
   * Every grant holding locks now, of every instance, oldest first.
   * @param filter `name`: only grants holding that lock name; `appId`: only that instance's grants.
   */
  getGrants(filter: LockGrantFilter = {}): Promise<LockGrant[]> {
    return this.store.listGrants(assertGrantFilter(filter));
  }

  /**
   * The newest lock log rows, newest first (forced releases carry `endedBy` and `endReason`).
   * @param options `limit` (1–10000, default 50), `since` (acquired or ended since), `name`, `stamp`.
   */
  getLog(options: LockLogQuery = {}): Promise<LockLogEntry[]> {
    if (options === null || typeof options !== 'object') {
      throw new InvalidLockArgumentError('options', options, 'an object { limit?, since?, name?, stamp? }');
    }
    const { limit = 50, since, name, stamp } = options;
    assertLimit(limit);
    if (since !== undefined && !(since instanceof Date && Number.isFinite(since.getTime()))) {
      throw new InvalidLockArgumentError('since', since, 'a valid Date');
    }
    if (name !== undefined) assertLockName(name);
    if (stamp !== undefined) assertStamp(stamp);
    return this.store.listLog({ limit, since, name, stamp });
  }

  /**
   * Every scheduled `@WithLocks` job the fleet has registered, by name: its schedule, next tick, last success (and
   * its age on the database clock) and its newest runs.
   * @param options `runs`: how many of each job's newest runs to include (0–100, default 5).
   */
  async getJobs(options: { readonly runs?: number } = {}): Promise<LockJobInfo[]> {
    const runs = options?.runs ?? 5;
    if (!(Number.isInteger(runs) && runs >= 0 && runs <= 100)) {
      throw new InvalidLockArgumentError('runs', runs, 'an integer from 0 to 100');
    }
    const store = this.jobStore();
    const jobs = await store.listJobs();
    return Promise.all(
      jobs.map(async (job) => ({ ...job, lastRuns: runs === 0 ? [] : await store.listRuns({ job: job.job, limit: runs }) })),
    );
  }

  /**
   * The run history of scheduled jobs, newest tick first: one row per job and tick, with the replica that ran it,
   * its start, duration and outcome, and how many replicas skipped it (busy, or already run elsewhere).
   * @param query `job`, `since` (ticks since then), `limit` (1–10000, default 50).
   */
  getJobRuns(query: LockJobRunQuery = {}): Promise<LockJobRun[]> {
    if (query === null || typeof query !== 'object') {
      throw new InvalidLockArgumentError('query', query, 'an object { job?, since?, limit? }');
    }
    const { job, since, limit = 50 } = query;
    assertLimit(limit);
    if (job !== undefined && (typeof job !== 'string' || job.length < 1 || job.length > 200)) {
      throw new InvalidLockArgumentError('job', job, 'a job name of 1-200 characters');
    }
    if (since !== undefined && !(since instanceof Date && Number.isFinite(since.getTime()))) {
      throw new InvalidLockArgumentError('since', since, 'a valid Date');
    }
    return this.jobStore().listRuns({ job, since, limit });
  }

  /**
   * Pauses `job` on every replica, from the moment this resolves until `resumeJob`: each tick of it is recorded
   * `paused` (with this actor and reason) and runs nowhere; a run under way finishes. The pause is kept in the
   * database: a replica that starts later obeys it. Pausing a paused job changes nothing (`changed: false`).
   * @param job the job as `getJobs` names it (`Class.method`, a schedule's name, `Class.method@appId` for a per-replica job).
   * @param control who pauses it and why (recorded in `locking_job_action` and in the paused ticks).
   * @throws InvalidLockArgumentError for a bad job name, an empty actor or reason, or one too long (before any database call).
   * @throws JobNotFoundError when no replica has registered the job (nothing is changed).
   */
  pauseJob(job: string, control: LockJobControl): Promise<LockJobAction> {
    return this.control(job, control, 'pause');
  }

  /**
   * Resumes a paused `job`: the next tick runs, on one replica as before. Resuming a job that is not paused changes
   * nothing (`changed: false`).
   * @throws InvalidLockArgumentError / JobNotFoundError as `pauseJob`.
   */
  resumeJob(job: string, control: LockJobControl): Promise<LockJobAction> {
    return this.control(job, control, 'resume');
  }

  /**
   * Asks for one extra run of `job` now, paused or not: within about a second a replica that has the job takes its
   * locks and runs it, once across the fleet, recorded in the history as a manual run (`manual`, `actor`, `reason`)
   * at the returned `tick` (outcome `'requested'` until a replica claims it). It never overlaps another run of the job:
   * while a run goes (or the job's locks are held), the request waits and is tried again every second. Resolves when
   * the request is recorded, not when the run ends: follow it with `getJobRuns({ job })`.
   * @throws InvalidLockArgumentError / JobNotFoundError as `pauseJob`.
   */
  runJobNow(job: string, control: LockJobControl): Promise<LockJobAction> {
    return this.control(job, control, 'run');
  }

  /**
   * The actions on scheduled jobs (pause, resume, run now), newest first: who, why and when.
   * @param query `job`: only that job's; `limit` (1–10000, default 50).
   */
  getJobActions(query: { readonly job?: string; readonly limit?: number } = {}): Promise<LockJobAction[]> {
    if (query === null || typeof query !== 'object') {
      throw new InvalidLockArgumentError('query', query, 'an object { job?, limit? }');
    }
    const { job, limit = 50 } = query;
    assertLimit(limit);
    if (job !== undefined && (typeof job !== 'string' || job.length < 1 || job.length > 200)) {
      throw new InvalidLockArgumentError('job', job, 'a job name of 1-200 characters');
    }
    return this.jobStore().listActions({ job, limit });
  }

  private async control(job: string, input: LockJobControl, action: LockJobActionKind): Promise<LockJobAction> {
    const { actor, reason } = assertJobControl(job, input);
    const store = this.jobStore();
    const act = action === 'pause' ? store.pauseJob : action === 'resume' ? store.resumeJob : store.requestRun;
    const result = await act.call(store, job, actor, reason);
    if (!result.found) throw new JobNotFoundError(job);
    const at = new Date(result.at);
    return { job, action, actor, reason, at, changed: result.changed, tick: action === 'run' ? at : null };
  }

  /**
   * Leader election across the fleet, as the database records it: every role (won at least once, or with candidates
   * waiting), sorted by name, with the replica that leads it now (app id, instance, since when, its term's fencing
   * token), the role's latest term, and the candidates waiting for it in the order they will be elected. One
   * statement: every replica, and the command line, sees the same.
   * @param filter `role`: only that role.
   * @throws InvalidLockArgumentError for an invalid role, before any database call.
   */
  getLeaders(filter: LockLeaderFilter = {}): Promise<LockLeaderInfo[]> {
    if (filter === null || typeof filter !== 'object') {
      throw new InvalidLockArgumentError('filter', filter, 'an object { role? }');
    }
    const { role } = filter;
    if (role !== undefined) assertLeaderRole(role);
    return this.store.listLeaders(role);
  }

  private jobStore(): JobRunStore {
    if (!this.jobRuns) throw new LockConfigurationError('This LockAdminService has no job history store');
    return this.jobRuns;
  }

  /** Every row of the permits table (names without a row use the instances' `defaultPermits`). */
  getPermits(): Promise<LockPermitsEntry[]> {
    return this.store.loadPermits();
  }

  /**
   * Writes the permits of one (name, mode), or deletes the row with `null` so that `defaultPermits` apply again.
   * Grants everywhere obey it from the moment it commits; the instances' caches pick it up on their next refresh.
   * @throws InvalidLockSpecError / InvalidLockArgumentError before any database call.
   */
  async setPermits(name: string, mode: LockMode, permits: number | null): Promise<void> {
    assertLockName(name);
    assertLockMode(mode);
    if (permits !== null) assertPermits(permits);
    await this.store.savePermits(name, mode, permits);
  }

  /**
   * The Galera node the DataSource's pool reaches, when the database is one (MariaDB Galera Cluster, Percona XtraDB
   * Cluster: `wsrep_on = ON`): its name, whether it is in the primary component of its cluster, its sync state and the
   * size of its component, as the server reports them in one statement. Undefined on PostgreSQL and on a MySQL or
   * MariaDB server that is not a Galera node. A node outside the primary component answers it too (it refuses every
   * statement that reads a table). Behind a proxy that spreads connections over the nodes, another connection of the
   * pool may reach another node.
   */
  getGaleraNode(): Promise<LockGaleraNode | undefined> {
    return this.store.galeraNode();
  }

  /**
   * The lock migrations recorded as run in the DataSource's TypeORM migrations table, those of this library version
   * (`LOCK_MIGRATIONS`, or `lockMigrations()` of the service's `schema` / `tablePrefix`) not run yet, and whether the
   * lock tables exist.
   */
  async getSchemaStatus(): Promise<LockSchemaStatus> {
    const { recorded, tablesPresent } = await this.store.schemaRows();
    const ours = lockMigrations(this.tables).map((migration) => migration.name);
    return {
      applied: recorded.filter((name) => ours.includes(name)),
      pending: ours.filter((name) => !recorded.includes(name)),
      tablesPresent,
    };
  }
}
