import { Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';
import { LockError } from '../errors/index.js';
import type { LeadershipChange, LockRequest } from '../interfaces/index.js';
import { type LeaderStates, LockLeaderMetrics } from './lock-leader-metrics.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { LockMetrics } from './lock-metrics.service.js';
import { type JobSuccessAges, type JobTickOutcome, LockJobMetrics } from './lock-job-metrics.js';
import {
  type AcquireTrace,
  type LockGaugeSources,
  LockTelemetry,
  type ReleaseTrace,
} from './lock-telemetry.service.js';
import { INSTRUMENTATION_SCOPE, LockTracing } from './lock-tracing.util.js';
import type { OtelApi } from './otel-api.loader.js';

const logger = new Logger('LockTelemetry');
let failureLogged = false;

/** A metric or a span could not be recorded: logged once, never thrown at a lock call (it may hold a grant). */
function telemetryFailed(error: unknown): void {
  if (failureLogged) return;
  failureLogged = true;
  logger.warn(`Recording a lock metric or span failed (logged once): ${(error as Error)?.message ?? String(error)}`);
}

/** One `tryLocks` call under way. */
class OtelAcquireTrace implements AcquireTrace {
  private readonly started = performance.now();
  private readonly span: Span;

  constructor(
    private readonly telemetry: OtelLockTelemetry,
    private readonly group: readonly LockRequest[],
    private readonly waitMs: number,
  ) {
    this.span = telemetry.tracing.startAcquire(group, waitMs);
  }

  ended(stamp: number): void {
    this.end(stamp, undefined);
  }

  failed(error: unknown): unknown {
    this.end(0, error);
    return error;
  }

  private end(stamp: number, error: unknown): void {
    try {
      const now = performance.now();
      const outcome = error !== undefined ? 'error' : stamp > 0 ? 'granted' : 'busy';
      this.telemetry.metrics.acquired(this.group, this.waitMs > 0, stamp, outcome, now, (now - this.started) / 1000);
      this.telemetry.tracing.endAcquire(this.span, stamp, error);
    } catch (failure) {
      telemetryFailed(failure);
    }
  }
}

/** One `releaseLocks` call under way. */
class OtelReleaseTrace implements ReleaseTrace {
  private readonly span: Span;

  constructor(
    private readonly telemetry: OtelLockTelemetry,
    private readonly stamp: number,
  ) {
    this.span = telemetry.tracing.startRelease(stamp);
  }

  ended(): void {
    this.end(true, undefined);
  }

  failed(error: unknown): unknown {
    this.end(false, error);
    return error;
  }

  private end(released: boolean, error: unknown): void {
    try {
      this.telemetry.metrics.released(this.stamp, released, performance.now());
      this.telemetry.tracing.endRelease(this.span, error);
    } catch (failure) {
      telemetryFailed(failure);
    }
  }
}

/**
 * `LockTelemetry` through `@opentelemetry/api`: the instruments of `LockMetrics` and the spans of `LockTracing`, on
 * the global MeterProvider and TracerProvider (the API's no-ops when the application registered none).
 * @internal
 */
export class OtelLockTelemetry extends LockTelemetry implements OnModuleDestroy {
  /** @internal */
  readonly metrics: LockMetrics;
  /** @internal */
  readonly tracing: LockTracing;
  /** @internal */
  readonly jobs: LockJobMetrics;
  /** @internal */
  readonly leaders: LockLeaderMetrics;

  constructor(api: OtelApi, options: ResolvedLockOptions) {
    super();
    const { appId, telemetry } = options;
    this.metrics = new LockMetrics(api.metrics.getMeter(INSTRUMENTATION_SCOPE), appId, telemetry.lockNameAttribute);
    this.tracing = new LockTracing(api, appId);
    this.jobs = new LockJobMetrics(api.metrics.getMeter(INSTRUMENTATION_SCOPE), appId);
    this.leaders = new LockLeaderMetrics(api.metrics.getMeter(INSTRUMENTATION_SCOPE), appId);
  }

  override get enabled(): boolean {
    return true;
  }

  override acquiring(group: readonly LockRequest[], waitMs: number): AcquireTrace {
    return new OtelAcquireTrace(this, group, waitMs);
  }

  override releasing(stamp: number): ReleaseTrace {
    return new OtelReleaseTrace(this, stamp);
  }

  override traceLocked<T>(target: string, run: () => Promise<T>): Promise<T> {
    return this.tracing.traceLocked(target, run);
  }

  override lost(stamp: number): void {
    try {
      this.metrics.lost(stamp);
    } catch (failure) {
      telemetryFailed(failure);
    }
  }

  override reaped(count: number): void {
    try {
      this.metrics.reaped(count);
    } catch (failure) {
      telemetryFailed(failure);
    }
  }

  override recovered(count: number): void {
    try {
      this.metrics.recovered(count);
    } catch (failure) {
      telemetryFailed(failure);
    }
  }

  override storeFailed<E>(error: E): E {
    try {
      if (error instanceof LockError) this.metrics.storeFailed(error);
    } catch (failure) {
      telemetryFailed(failure);
    }
    return error;
  }

  override observe(sources: LockGaugeSources): void {
    this.metrics.observe(sources);
  }

  override jobRan(job: string, outcome: JobTickOutcome, manual = false): void {
    try {
      this.jobs.ran(job, outcome, manual);
    } catch (failure) {
      telemetryFailed(failure);
    }
  }

  override observeJobs(ages: JobSuccessAges): void {
    this.jobs.observe(ages);
  }

  override leadershipChanged(change: LeadershipChange): void {
    try {
      this.leaders.changed(change);
    } catch (failure) {
      telemetryFailed(failure);
    }
  }

  override observeLeaders(states: LeaderStates): void {
    this.leaders.observe(states);
  }

  /** @internal */
  onModuleDestroy(): void {
    this.metrics.close();
    this.jobs.close();
    this.leaders.close();
  }
}
