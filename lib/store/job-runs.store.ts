import { LockStoreError } from '../errors/index.js';
import type { LockJobAction, LockJobActionKind, LockJobInfo, LockJobOutcome, LockJobRun, LockJobRunQuery } from '../interfaces/index.js';

/**
 * A tick to claim: a fire time (epoch ms) that may be claimed until `until` (epoch ms: a cron tick's next fire time;
 * absent: only the tick itself, as a per-replica or `@Timeout` run), or the current period of `periodMs` on the
 * database clock (claimable until the period ends). Pruning keeps a tick's row until it can no longer be claimed.
 * @internal
 */
export type TickSource = { readonly at: number; readonly until?: number | null } | { readonly periodMs: number };

/** What a claim found. @internal */
export interface TickClaim {
  /** The tick (epoch ms). */
  readonly tick: number;
  /**
   * `'claimed'`: this run is the tick's; `'busy'`: another run of the job still goes (or the locks were busy);
   * `'elsewhere'`: another replica claimed it first; `'paused'`: the job is paused (the tick is recorded `paused`).
   */
  readonly result: 'claimed' | 'busy' | 'elsewhere' | 'paused';
  /** The database clock at the claim (epoch ms). */
  readonly dbNow: number;
}

/** The end of a claimed run. @internal */
export interface RunEnd {
  readonly outcome: Exclude<LockJobOutcome, 'running' | 'skipped' | 'abandoned' | 'paused' | 'requested'>;
  readonly error: string | null;
  readonly durationMs: number;
}

/** What the pre-check of a tick found (`JobRunStore.checkTick`). @internal */
export interface TickCheck {
  /** The tick (epoch ms). */
  readonly tick: number;
  /** Whether a replica has already claimed the tick (this one was then counted in its `skipped_elsewhere`). */
  readonly taken: boolean;
  /** The database clock at the check (epoch ms). */
  readonly dbNow: number;
}

/** A "run now" waiting for a replica: the job and the tick that names it. @internal */
export interface RunRequest {
  readonly job: string;
  readonly tick: number;
}

/** What a control found: whether the job exists, whether it changed anything, and the database clock (epoch ms). @internal */
export interface ControlResult {
  readonly found: boolean;
  readonly changed: boolean;
  readonly at: number;
}

/** Which actions `JobRunStore.listActions` returns. @internal */
export interface JobActionQuery {
  readonly job?: string;
  readonly limit: number;
}

/** A job as its replicas register it. @internal */
export interface JobRegistration {
  readonly job: string;
  readonly schedule: string;
  readonly nextTick: number | null;
}

/**
 * The storage port of the run history of scheduled jobs (`locking_job_run`, `locking_job`), one implementation per
 * dialect. @internal
 */
export abstract class JobRunStore {
  /**
   * Claims `tick` of `job` for a run under `stamp` (null: the replica found the job's locks busy, and only counts
   * itself, or records the tick of a paused job `paused`). Exactly one claim of a tick is `claimed`, across the fleet, and at most one run of a job is `running` with
   * a live grant: the claims of one job are serialised. A claim under a stamp that already claimed a tick of the job
   * returns that tick, `claimed` (so a claim whose answer was lost is made again safely: see `claimResolvingLoss`).
   */
  abstract claim(job: string, tick: TickSource, appId: string, stamp: number | null): Promise<TickClaim>;
  /** Records the end of the run of `tick` claimed under `stamp`. */
  abstract endRun(job: string, tick: number, stamp: number, end: RunEnd): Promise<void>;
  /** Registers the job's schedule and next tick, and records a success when `succeeded`. */
  abstract touchJob(registration: JobRegistration, succeeded: boolean): Promise<void>;
  /** Runs, newest tick first. */
  abstract listRuns(query: Required<Pick<LockJobRunQuery, 'limit'>> & LockJobRunQuery): Promise<LockJobRun[]>;
  /** Every registered job, without its runs. */
  abstract listJobs(): Promise<Array<Omit<LockJobInfo, 'lastRuns'>>>;
  /**
   * Deletes up to `limit` ended runs whose tick is older than `retentionMs` and that can no longer be claimed (past
   * their `claimable_until`); returns how many.
   */
  abstract pruneRuns(retentionMs: number, limit: number): Promise<number>;
  /** Marks `jobs` (the ones this replica registered) as still registered by a live replica. */
  abstract keepJobs(jobs: readonly string[]): Promise<void>;
  /** Deletes the jobs no replica has kept (nor run) for `idleMs`: those of replicas long gone. Returns how many. */
  abstract retireJobs(idleMs: number): Promise<number>;
  /**
   * The pre-check of a tick, before the job's locks are taken: whether `tick` of `job` is already claimed (then this
   * replica is counted in the tick's `skipped_elsewhere`), and the database clock. A tick found open is only a hint:
   * the claim, under the locks, decides.
   */
  abstract checkTick(job: string, tick: TickSource): Promise<TickCheck>;
  /**
   * Records an end that could not be written when the run ended (the database was away): the run's end, and the
   * job's success `endedAgoMs` before the database's clock (never moving the last success back). The job's next tick
   * is left as it is.
   */
  abstract endRunLate(job: string, schedule: string, tick: number, stamp: number, end: RunEnd, endedAgoMs: number): Promise<void>;
  /**
   * Pauses `job` for the whole fleet (when registered and not paused yet) and records the action; every claim
   * committed after it records its tick `paused`.
   */
  abstract pauseJob(job: string, actor: string, reason: string): Promise<ControlResult>;
  /** Resumes `job` (when paused) and records the action: the next claim runs its tick. */
  abstract resumeJob(job: string, actor: string, reason: string): Promise<ControlResult>;
  /**
   * Requests one extra run of `job` (when registered): a `requested` row at a tick of the database clock that no
   * schedule names (see `requestTickOf`), with its actor and reason, and the action. `at` is that tick.
   */
  abstract requestRun(job: string, actor: string, reason: string): Promise<ControlResult>;
  /** The requests not claimed yet of `jobs`. */
  abstract listRequests(jobs: readonly string[]): Promise<RunRequest[]>;
  /**
   * Claims the request `tick` of `job` for a run under `stamp`: `claimed` (also when the stamp claimed it already),
   * `busy` while another run of the job goes (its grant live; the request stays), else `elsewhere`.
   */
  abstract claimRequest(job: string, tick: number, appId: string, stamp: number): Promise<TickClaim>;
  /** The actions on jobs, newest first. */
  abstract listActions(query: JobActionQuery): Promise<LockJobAction[]>;
}

/**
 * The tick of a "run now" requested at `nowMs` (database clock) for a job of `schedule`: `nowMs`, moved on by a
 * millisecond or two when a schedule could name it (a cron tick is a whole second, an interval tick a multiple of
 * its period), so that a scheduled tick never finds its row taken by a request. @internal
 */
export function requestTickOf(nowMs: number, schedule: string): number {
  const period = Number(/^every (\d+) ms$/.exec(schedule)?.[1] ?? 0);
  let tick = Math.floor(nowMs);
  for (let tries = 0; tries < 3 && (tick % 1000 === 0 || (period > 1 && tick % period === 0)); tries++) tick++;
  return tick;
}

/** How many ticks a request tries before giving up (each taken by another request of the same millisecond). */
const REQUEST_TICK_ATTEMPTS = 20;

/**
 * Requests a run at the first free tick from `nowMs` on (see `requestTickOf`): `insert` writes the request at a tick
 * and answers whether the tick was free. Returns the tick.
 * @throws LockStoreError when every tick tried was taken.
 * @internal
 */
export async function requestAtFreeTick(nowMs: number, schedule: string, insert: (tick: number) => Promise<boolean>): Promise<number> {
  let tick = requestTickOf(nowMs, schedule);
  for (let attempt = 1; attempt <= REQUEST_TICK_ATTEMPTS; attempt++, tick = requestTickOf(tick + 1, schedule)) {
    if (await insert(tick)) return tick;
  }
  throw new LockStoreError('requestJobRun', undefined, false, new Error(`no free tick in ${REQUEST_TICK_ATTEMPTS} attempts`));
}

/** How many times a claim whose answer was lost is made again before its error is thrown. */
const LOST_CLAIM_ATTEMPTS = 3;

/**
 * Runs `claim` (one claim of a tick under `stamp`) and, when its answer is lost after it may have committed (a
 * `LockStoreError` with `outcomeUnknown`: a connection reset), makes it again: a claim under the same stamp finds the
 * run it may already have claimed (the stamp is unique per grant) and returns that tick, or claims as if the first
 * had never been. A count of a busy replica (no stamp) is not made again. @internal
 */
export async function claimResolvingLoss(stamp: number | null, claim: () => Promise<TickClaim>): Promise<TickClaim> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await claim();
    } catch (error) {
      const lost = error instanceof LockStoreError && error.outcomeUnknown;
      if (!lost || stamp === null || attempt >= LOST_CLAIM_ATTEMPTS) throw error;
    }
  }
}

/** A row of `locking_job_run` as both dialects select it. @internal */
export interface RunRow {
  job: string;
  tick_ms: number | string;
  outcome: LockJobOutcome;
  app_id: string | null;
  stamp: string | null;
  started: Date | string | null;
  duration_ms: number | null;
  error: string | null;
  skipped_busy: number | string;
  skipped_elsewhere: number | string;
  manual: boolean | number | string;
  actor: string | null;
  reason: string | null;
}

/** A row of `locking_job` as both dialects select it. @internal */
export interface JobRow {
  job: string;
  schedule: string;
  next_tick: Date | string | null;
  last_succeeded: Date | string | null;
  last_succeeded_age: number | string | null;
  paused_by: string | null;
  paused_reason: string | null;
  paused_at: Date | string | null;
}

/** A row of `locking_job_action` as both dialects select it. @internal */
export interface ActionRow {
  job: string;
  action: LockJobActionKind;
  actor: string;
  reason: string;
  acted_at: Date | string;
}

/** A `LockJobAction` from its row. @internal */
export function toJobAction(row: ActionRow): LockJobAction {
  return { job: row.job, action: row.action, actor: row.actor, reason: row.reason, at: new Date(row.acted_at), changed: true, tick: null };
}

const dateOf = (value: Date | string | null): Date | null => (value === null ? null : new Date(value));

/** A `LockJobRun` from its row. @internal */
export function toJobRun(row: RunRow): LockJobRun {
  return {
    job: row.job,
    tick: new Date(Math.round(Number(row.tick_ms))),
    outcome: row.outcome,
    appId: row.app_id,
    stamp: row.stamp === null ? null : Number(row.stamp),
    startedAt: dateOf(row.started),
    durationMs: row.duration_ms === null ? null : Number(row.duration_ms),
    error: row.error,
    skippedBusy: Number(row.skipped_busy),
    skippedElsewhere: Number(row.skipped_elsewhere),
    manual: row.manual === true || Number(row.manual) === 1,
    actor: row.actor,
    reason: row.reason,
  };
}

/** A job (without its runs) from its row. @internal */
export function toJobInfo(row: JobRow): Omit<LockJobInfo, 'lastRuns'> {
  return {
    job: row.job,
    schedule: row.schedule,
    nextTick: dateOf(row.next_tick),
    lastSucceededAt: dateOf(row.last_succeeded),
    lastSucceededAgeSeconds: row.last_succeeded_age === null ? null : Number(row.last_succeeded_age),
    paused:
      row.paused_by === null ? null : { actor: row.paused_by, reason: row.paused_reason ?? '', since: new Date(row.paused_at!) },
  };
}
