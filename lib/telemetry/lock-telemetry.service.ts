import type { LeadershipChange, LockRequest } from '../interfaces/index.js';
import type { LeaderStates } from './lock-leader-metrics.js';
import type { JobSuccessAges, JobTickOutcome } from './lock-job-metrics.js';

/** What one `tryLocks` call reports when it has ended. @internal */
export interface AcquireTrace {
  /** The call ended with `stamp` (0: not available). */
  ended(stamp: number): void;
  /** The call threw `error`; returns it, for `throw trace.failed(error)`. */
  failed(error: unknown): unknown;
}

/** What one `releaseLocks` call reports when it has ended. @internal */
export interface ReleaseTrace {
  /** The grant was released. */
  ended(): void;
  /** The call threw `error`; returns it, for `throw trace.failed(error)`. */
  failed(error: unknown): unknown;
}

/** What the observable gauges read when the metrics are collected. @internal */
export interface LockGaugeSources {
  /** Grants this process holds (tracked by its lease renewals). */
  readonly held: () => number;
  /** `tryLocks` calls of this process waiting (`waitMs`). */
  readonly waiters: () => number;
  /** Round trips repeated after a transient failure since start. */
  readonly retries: () => number;
}

/** The trace of a call when nothing is recorded: one shared object, no allocation per call. */
const NO_TRACE: AcquireTrace & ReleaseTrace = {
  ended: () => undefined,
  failed: (error) => error,
};

/**
 * Where the lock engine reports what it does, for metrics and spans. This class records nothing: it is what the
 * module provides when telemetry is disabled or `@opentelemetry/api` is not installed. `OtelLockTelemetry` records
 * through OpenTelemetry. The class doubles as the injection token; every hook is one call from the engine.
 * @internal
 */
export class LockTelemetry {
  /** Whether anything is recorded. */
  get enabled(): boolean {
    return false;
  }

  /** A `tryLocks` call of `group` starts (after its input was validated). */
  acquiring(_group: readonly LockRequest[], _waitMs: number): AcquireTrace {
    return NO_TRACE;
  }

  /** A `releaseLocks(stamp)` call starts (after its input was validated). */
  releasing(_stamp: number): ReleaseTrace {
    return NO_TRACE;
  }

  /** Runs a locked method (`@WithLocks`, `withLocks`) named `target`, in a span of its own when tracing. */
  traceLocked<T>(_target: string, run: () => Promise<T>): Promise<T> {
    return run();
  }

  /** A grant of this process was lost (its signal fired). */
  lost(_stamp: number): void {}

  /** The reaper of this process freed `count` stale grants (of any instance). */
  reaped(_count: number): void {}

  /** Recovery (`releaseAllLocks`) freed `count` lock rows of this app. */
  recovered(_count: number): void {}

  /**
   * A statement of the store failed for good with `error` (what its caller gets: a `LockError` counts); returns it,
   * for `throw telemetry.storeFailed(error)`.
   */
  storeFailed<E>(error: E): E {
    return error;
  }

  /** Starts reporting the observable gauges from `sources`. */
  observe(_sources: LockGaugeSources): void {}

  /** A tick of the scheduled job `job` ended on this replica with `outcome` (a "run now" of it when `manual`). */
  jobRan(_job: string, _outcome: JobTickOutcome, _manual?: boolean): void {}

  /** Starts reporting the age of each job's last successful run from `ages`. */
  observeJobs(_ages: JobSuccessAges): void {}

  /** This replica began or stopped leading a role (`LeaderService.changes`). */
  leadershipChanged(_change: LeadershipChange): void {}

  /** Starts reporting, per role this replica stands for, whether it leads and its term, from `states`. */
  observeLeaders(_states: LeaderStates): void {}
}
