import type { LockJobRuns } from '../interfaces/index.js';
import type { TickSource } from '../store/job-runs.store.js';
import { cronTickOf, type JobSchedule } from './job-schedule.util.js';

/** A scheduled `@WithLocks` method (or a job registered at run time), as its declaration describes it. @internal */
export interface ScheduledJob {
  /** The job's identity: the schedule's own name, else `Class.method` (see `jobIdentityOf`). */
  readonly label: string;
  readonly schedule: JobSchedule;
  readonly runs: LockJobRuns;
}

/** One tick as a replica sees it: the job's name in the history, what to claim, and how to find the next tick. @internal */
export interface TickPlan {
  readonly job: string;
  /** The schedule's description, for the history. */
  readonly schedule: string;
  readonly source: TickSource;
  /** The skew bound (ms) for a tick named by this replica's clock; undefined when the database names it. */
  readonly skewBoundMs?: number;
  readonly next: (tick: number) => number | null;
  /** A "run now" of the job (named by its request's tick), not a tick of its schedule. */
  readonly manual?: boolean;
}

/**
 * Whether each replica runs the job on its own (per-replica, or a `@Timeout` start-up task), not once per tick, under
 * a history name of its own (`<identity>@<appId>`).
 * @internal
 */
export function runsPerReplica(job: ScheduledJob): boolean {
  return job.runs === 'per-replica' || job.schedule.kind === 'timeout';
}

/**
 * How replica `appId` names the tick its timer fired for at `now` (its own clock): a `@Cron` tick by the latest fire time at
 * or before `now` (see `cronTickOf`), a once-per-tick `@Interval` tick by the database's current period (named in the claim), a per-replica or
 * `@Timeout` run by the replica's clock under a job name of its own (`<identity>@<appId>`).
 * @internal
 */
export function planTick(job: ScheduledJob, appId: string, now: number): TickPlan {
  const { schedule } = job;
  const perReplica = runsPerReplica(job);
  const base = { job: perReplica ? `${job.label}@${appId}` : job.label, schedule: schedule.description };
  if (schedule.kind === 'cron') {
    const { tick, period, next } = cronTickOf(schedule.time, now);
    // Claimable until its next fire time: no timer names this tick after that (the skew bound is a third of a period).
    return { ...base, source: { at: tick, until: next }, skewBoundMs: perReplica ? undefined : period / 3, next: () => next };
  }
  if (perReplica) {
    return { ...base, source: { at: now }, next: (tick) => (schedule.kind === 'interval' ? tick + schedule.ms : null) };
  }
  return { ...base, source: { periodMs: schedule.ms }, next: (tick) => tick + schedule.ms };
}
