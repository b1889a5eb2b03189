/**
 * How a run of a scheduled job under `@WithLocks` ended, as its history records it.
 * - `'running'`: started, not ended yet (its grant is live);
 * - `'succeeded'`: the method resolved;
 * - `'failed'`: the method threw (`error` names the error's class);
 * - `'lock-lost'`: the grant was lost while the method ran (`LockLostError`, or the release found it gone);
 * - `'abandoned'`: started, and its replica died or lost its grant before recording an end (reaped, or freed at its
 *   restart), or the method was refused a lock because its replica was shutting down (`LockShutdownError`: not a
 *   failure, logged as one debug line);
 * - `'skipped'`: no replica ran the tick: every replica that came to it found the job busy (`skippedBusy`);
 * - `'paused'`: the job was paused at this tick (`LockAdminService.pauseJob`): no replica ran it (`actor` and
 *   `reason` are the pause's);
 * - `'requested'`: a "run now" (`LockAdminService.runJobNow`) no replica has claimed yet.
 * @publicApi
 */
export type LockJobOutcome =
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'lock-lost'
  | 'abandoned'
  | 'skipped'
  | 'paused'
  | 'requested';

/**
 * How a scheduled job under `@WithLocks` runs on a fleet.
 * - `'once-per-tick'`: each tick (`@Cron`) or period (`@Interval`) runs on one replica of the fleet, claimed in the
 *   database; the other replicas skip it;
 * - `'per-replica'`: every replica runs every tick (never two at once: the locks still apply), as a job that must run
 *   on each replica needs.
 * @publicApi
 */
export type LockJobRuns = 'once-per-tick' | 'per-replica';

/**
 * One tick of a scheduled job, as the run history (`locking_job_run`) records it. Times are database time, except
 * `tick`: a `@Cron` tick is the cron expression's fire time, a once-per-tick `@Interval` tick the start of its period
 * on the database clock.
 * @publicApi
 */
export interface LockJobRun {
  /** The job: `Class.method`, with `@appId` appended for a per-replica job. */
  readonly job: string;
  /** The tick this row is about. */
  readonly tick: Date;
  /** How it ended (see `LockJobOutcome`). */
  readonly outcome: LockJobOutcome;
  /** The replica (`appId`) that ran it; null when none did. */
  readonly appId: string | null;
  /** The stamp of the grant it ran under; null when none ran it. */
  readonly stamp: number | null;
  /** When the run started (database clock); null when none ran it. */
  readonly startedAt: Date | null;
  /** How long the method ran, in milliseconds; null while running or when none ran it. */
  readonly durationMs: number | null;
  /** The name of the error's class, for `'failed'` and `'lock-lost'`. */
  readonly error: string | null;
  /** Replicas that came to this tick and found the job busy (its locks held, or an earlier run still going). */
  readonly skippedBusy: number;
  /** Replicas that came to this tick after another had claimed it ("already run elsewhere"). */
  readonly skippedElsewhere: number;
  /** Whether this run is a "run now" (`LockAdminService.runJobNow`), not a tick of the schedule: its `tick` is the request's time. */
  readonly manual: boolean;
  /** Who asked for this manual run, or who paused the job (`'paused'`); null for a scheduled run. */
  readonly actor: string | null;
  /** Why (the request's or the pause's reason); null for a scheduled run. */
  readonly reason: string | null;
}

/**
 * Who paused a job, why and since when (database clock), as `LockJobInfo.paused` reports it.
 * @publicApi
 */
export interface LockJobPause {
  /** Who paused it. */
  readonly actor: string;
  /** Why. */
  readonly reason: string;
  /** Since when (database clock). */
  readonly since: Date;
}

/**
 * What an operator does to a scheduled job across the fleet: `'pause'`, `'resume'`, or `'run'` (one extra run now).
 * @publicApi
 */
export type LockJobActionKind = 'pause' | 'resume' | 'run';

/**
 * Who acts on a scheduled job and why: the argument of `LockAdminService.pauseJob`, `resumeJob` and `runJobNow`.
 * @publicApi
 */
export interface LockJobControl {
  /** Who acts (a person or a system): 1–200 characters, not blank. */
  readonly actor: string;
  /** Why: 1–500 characters, not blank. */
  readonly reason: string;
}

/**
 * One action on a scheduled job (`locking_job_action`), as `LockAdminService.getJobActions` lists it and the control
 * methods return it.
 * @publicApi
 */
export interface LockJobAction {
  /** The job (as `LockAdminService.getJobs` names it). */
  readonly job: string;
  /** What was done. */
  readonly action: LockJobActionKind;
  /** Who did it. */
  readonly actor: string;
  /** Why. */
  readonly reason: string;
  /** When (database clock). */
  readonly at: Date;
  /**
   * Whether the action changed anything: false for a pause of a job already paused or a resume of a job not paused
   * (then nothing is recorded, and `actor`, `reason` and `at` are this call's). Always true for `'run'`.
   */
  readonly changed: boolean;
  /** For `'run'`: the tick that names the requested run in the history (its `outcome` is `'requested'` until a replica claims it); else null. */
  readonly tick: Date | null;
}

/**
 * A scheduled job under `@WithLocks`, as `LockAdminService.getJobs` reports it.
 * @publicApi
 */
export interface LockJobInfo {
  /** The job: `Class.method` (with `@appId` for a per-replica job). */
  readonly job: string;
  /** Its schedule: `cron <expression>`, `every <ms> ms`, or `timeout <ms> ms`. */
  readonly schedule: string;
  /** Its next tick, as the replica that claimed the last one computed it; null when unknown. */
  readonly nextTick: Date | null;
  /** When its last successful run ended (database clock); null when none has succeeded yet. */
  readonly lastSucceededAt: Date | null;
  /** Seconds since then, on the database clock; null when none has succeeded yet. */
  readonly lastSucceededAgeSeconds: number | null;
  /** Who paused it, why and since when; null when it is not paused. */
  readonly paused: LockJobPause | null;
  /** Its newest runs, newest tick first. */
  readonly lastRuns: readonly LockJobRun[];
}

/**
 * Which runs `LockAdminService.getJobRuns` returns.
 * @publicApi
 */
export interface LockJobRunQuery {
  /** Only this job's runs. */
  readonly job?: string;
  /** Only ticks since then. */
  readonly since?: Date;
  /**
   * At most this many rows (1–10000), newest tick first.
   * @default 50
   */
  readonly limit?: number;
}
