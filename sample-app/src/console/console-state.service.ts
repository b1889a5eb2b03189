import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  LockAdminService,
  type LockGrant,
  type LockJobInfo,
  type LockLeaderInfo,
  LockingPermissionEntity,
  type LockLogEntry,
  type LockPermits,
  LockService,
  type LockStats,
  type LockWaiterInfo,
} from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { type ActivityEntry, ActivityService } from '../activity/activity.service.js';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample.config.js';
import { LoanEntity } from '../loans/loan.entity.js';

/** The permits of one lock name, as the console shows them. */
export interface PermitsLine {
  readonly name: string;
  /** What this instance's permits cache says (what it refreshed last; `defaultPermits` where there is no row). */
  readonly inForce: LockPermits;
  /** The rows committed in `locking_permissions` now (`null`: no row, the default applies). */
  readonly rows: { readonly read: number | null; readonly write: number | null };
}

/** `GET /api/permits`. */
export interface PermitsView {
  /** Permits of a (name, mode) without a row. */
  readonly defaults: LockPermits;
  /** How often every instance's cache reloads the table. */
  readonly refreshIntervalMs: number;
  readonly names: readonly PermitsLine[];
}

/** `GET /api/state`: everything the console page shows, in one round trip. */
export interface ConsoleState {
  /** The instance that answered. */
  readonly appId: string;
  /** How often the page polls this. */
  readonly pollMs: number;
  /** Whether this instance runs the scheduled jobs and the simulated traffic (`SAMPLE_JOBS=off` turns them off). */
  readonly schedule: boolean;
  readonly grants: readonly LockGrant[];
  /** The callers waiting for a group now, every instance, in waiting order. */
  readonly waiters: readonly LockWaiterInfo[];
  readonly permits: PermitsView;
  readonly log: readonly LockLogEntry[];
  /** The scheduled `@WithLocks` jobs of the fleet: schedule, next tick, last success and last runs. */
  readonly jobs: readonly LockJobInfo[];
  /**
   * The leader-election roles of the fleet (the sample's `loan-book-report`): leader, since, term, candidates in order.
   */
  readonly leaders: readonly LockLeaderInfo[];
  /** This instance's own recent jobs and loan operations. */
  readonly activity: readonly ActivityEntry[];
  /** This instance's `LockService` counters. */
  readonly stats: LockStats;
}

/** The lock names every instance of the sample uses, first in the permits table. */
const FIXED_NAMES = ['WS1', 'WS2'];

/** Gathers what the lock console shows, from `LockService` (grants, log, permits cache) and the permits table. */
@Injectable()
export class ConsoleStateService {
  constructor(
    private readonly locks: LockService,
    private readonly admin: LockAdminService,
    private readonly activity: ActivityService,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /** Everything at once, for the page. */
  async state(logLimit = 25): Promise<ConsoleState> {
    const [grants, waiters, log, jobs, leaders] = await Promise.all([
      this.grants(),
      this.waiters(),
      this.log(logLimit),
      this.jobs(),
      this.leaders(),
    ]);
    const permits = await this.permits(grants);
    return {
      appId: this.locks.appId,
      pollMs: this.config.consolePollMs,
      schedule: this.config.schedule,
      grants,
      waiters,
      permits,
      log,
      jobs,
      leaders,
      activity: this.activity.latest(),
      stats: this.locks.getStats(),
    };
  }

  /** Every grant holding locks now, across all instances, oldest first. */
  grants(): Promise<LockGrant[]> {
    return this.locks.getGrants();
  }

  /** Every caller waiting for a group now, across all instances, in waiting order. */
  waiters(): Promise<LockWaiterInfo[]> {
    return this.admin.listWaiters();
  }

  /** The scheduled jobs of every instance, each with its last 5 runs. */
  jobs(): Promise<LockJobInfo[]> {
    return this.admin.getJobs({ runs: 5 });
  }

  /** Every leader-election role of the fleet, read from the database (whichever instance answers). */
  leaders(): Promise<LockLeaderInfo[]> {
    return this.admin.getLeaders();
  }

  /** The newest lock log rows. */
  log(limit: number): Promise<LockLogEntry[]> {
    return this.locks.getLog(limit);
  }

  /**
   * The permits of every name the sample uses, of every name with a row, and of every name held now.
   * @param held the grants to take names from (read now when not given)
   */
  async permits(held?: readonly LockGrant[]): Promise<PermitsView> {
    const [rows, loans, grants] = await Promise.all([
      this.dataSource.getRepository(LockingPermissionEntity).find(),
      this.dataSource.getRepository(LoanEntity).find({ select: { id: true }, order: { id: 'ASC' } }),
      held ?? this.locks.getGrants(),
    ]);
    const names = new Set([
      ...FIXED_NAMES,
      ...loans.map((loan) => `loan:${loan.id}`),
      ...rows.map((row) => row.lockName),
      ...grants.flatMap((grant) => grant.locks.map((lock) => lock.name)),
    ]);
    const rowOf = (name: string, mode: 'R' | 'W') =>
      rows.find((row) => row.lockName === name && row.mode === mode)?.permits ?? null;
    return {
      defaults: { read: this.config.defaultReadPermits, write: 1 },
      refreshIntervalMs: this.config.permitsRefreshIntervalMs,
      names: [...names].map((name) => ({
        name,
        inForce: this.locks.getLockPermits(name),
        rows: { read: rowOf(name, 'R'), write: rowOf(name, 'W') },
      })),
    };
  }
}
