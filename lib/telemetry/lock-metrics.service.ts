import type { Attributes, Counter, Histogram, Meter, ObservableResult } from '@opentelemetry/api';
import { LockStoreError, type LockError } from '../errors/index.js';
import type { LockRequest } from '../interfaces/index.js';
import { type AcquireOutcome, type LockAttributes, LockAttributeCache } from './lock-attributes.util.js';
import type { LockGaugeSources } from './lock-telemetry.service.js';

/** Prefix of every instrument name. @internal */
export const METRIC_PREFIX = 'nestjs_db_locks';

/** Bucket bounds of the duration histograms, in seconds: from half a millisecond to five minutes. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** What the lock counters count. */
const LOCK_COUNTER_DESCRIPTIONS = {
  grants: 'Locks granted by tryLocks (one per lock of a granted group)',
  busy: 'Locks of the groups tryLocks refused as not available',
  releases: 'Locks released by releaseLocks',
} as const;

/** A grant this process holds, as far as the metrics know: for its hold time, and the attributes of its loss. */
interface HeldGrant {
  /** `performance.now()` when it was granted. */
  readonly at: number;
  readonly locks: readonly LockAttributes[];
}

/**
 * The library's OpenTelemetry instruments, created once, and their recording. A group adds one data point per lock
 * of the group (attributes `lock.name`, `lock.mode`, `app.id`), from pre-built attribute objects.
 * @internal
 */
export class LockMetrics {
  private readonly attributes: LockAttributeCache;
  private readonly lostGrants: Counter;
  private readonly reapedGrants: Counter;
  private readonly recoveredLocks: Counter;
  private readonly storeErrors: Counter;
  private readonly acquireDuration: Histogram;
  private readonly waitDuration: Histogram;
  private readonly holdDuration: Histogram;
  private readonly held = new Map<number, HeldGrant>();
  private readonly errorAttributes = new Map<string, Attributes>();
  private stopObserving?: () => void;
  private stopCounting?: () => void;

  constructor(
    private readonly meter: Meter,
    appId: string,
    lockNameAttribute: (name: string) => string,
  ) {
    this.attributes = new LockAttributeCache(appId, lockNameAttribute);
    const counter = (name: string, unit: string, description: string): Counter =>
      meter.createCounter(`${METRIC_PREFIX}.${name}`, { unit, description });
    const histogram = (name: string, description: string): Histogram =>
      meter.createHistogram(`${METRIC_PREFIX}.${name}`, {
        unit: 's',
        description,
        advice: { explicitBucketBoundaries: DURATION_BUCKETS },
      });
    this.stopCounting = this.observeLockCounts();
    this.lostGrants = counter('lost', '{lock}', "Locks of grants this process lost (the grant's signal fired)");
    this.reapedGrants = counter('reaped', '{grant}', 'Stale grants (of any instance) freed by this instance’s reaper');
    this.recoveredLocks = counter('recovered', '{lock}', 'Lock rows of this app freed by releaseAllLocks');
    this.storeErrors = counter('store.errors', '{error}', 'Database failures reported to a caller or a task');
    this.acquireDuration = histogram('acquire.duration', 'Duration of tryLocks calls, waits included');
    this.waitDuration = histogram('wait.duration', 'Duration of tryLocks calls that wait (waitMs > 0)');
    this.holdDuration = histogram('hold.duration', 'Time from the grant to the release, measured in this process');
  }

  /** Records one ended `tryLocks` call that took `seconds`; a grant is remembered for its hold time. */
  acquired(group: readonly LockRequest[], waited: boolean, stamp: number, outcome: AcquireOutcome, at: number, seconds: number): void {
    const locks: LockAttributes[] = [];
    for (const { name, mode } of group) {
      const attributes = this.attributes.of(name, mode);
      locks.push(attributes);
      if (outcome === 'granted') attributes.counts.grants++;
      else if (outcome === 'busy') attributes.counts.busy++;
      this.acquireDuration.record(seconds, attributes.outcome[outcome]);
      if (waited) this.waitDuration.record(seconds, attributes.outcome[outcome]);
    }
    if (stamp > 0) this.held.set(stamp, { at, locks });
  }

  /** Records the release of `stamp` at `at`, or only forgets it (`released` false: the release failed). */
  released(stamp: number, released: boolean, at: number): void {
    const grant = this.held.get(stamp);
    if (!grant) return;
    this.held.delete(stamp);
    if (!released) return;
    const seconds = (at - grant.at) / 1000;
    for (const attributes of grant.locks) {
      attributes.counts.releases++;
      this.holdDuration.record(seconds, attributes.base);
    }
  }

  /** Counts the loss of `stamp`, a grant of this process. */
  lost(stamp: number): void {
    const grant = this.held.get(stamp);
    if (!grant) return;
    this.held.delete(stamp);
    for (const attributes of grant.locks) this.lostGrants.add(1, attributes.base);
  }

  reaped(count: number): void {
    if (count > 0) this.reapedGrants.add(count, this.attributes.app);
  }

  recovered(count: number): void {
    if (count > 0) this.recoveredLocks.add(count, this.attributes.app);
  }

  /** Counts a store failure by operation, kind (SQLSTATE, Node.js code, or error class) and `outcomeUnknown`. */
  storeFailed(error: LockError): void {
    const operation = error instanceof LockStoreError ? error.operation : 'unknown';
    const type = (error instanceof LockStoreError ? error.code : undefined) ?? error.name;
    const outcomeUnknown = error instanceof LockStoreError && error.outcomeUnknown;
    const key = `${operation}\u0000${type}\u0000${outcomeUnknown}`;
    let attributes = this.errorAttributes.get(key);
    if (!attributes) {
      attributes = { operation, 'error.type': type, outcome_unknown: outcomeUnknown, ...this.attributes.app };
      this.errorAttributes.set(key, attributes);
    }
    this.storeErrors.add(1, attributes);
  }

  /** Reports the gauges (grants held, waiters) and the retry counter from `sources` at every collection. */
  observe(sources: LockGaugeSources): void {
    this.stopObserving?.();
    const { meter } = this;
    const app = this.attributes.app;
    const held = meter.createObservableGauge(`${METRIC_PREFIX}.grants.held`, {
      unit: '{grant}',
      description: 'Grants this process holds now',
    });
    const waiters = meter.createObservableGauge(`${METRIC_PREFIX}.waiters`, {
      unit: '{call}',
      description: 'tryLocks calls of this process waiting now',
    });
    const retries = meter.createObservableCounter(`${METRIC_PREFIX}.retries`, {
      unit: '{retry}',
      description: 'Statements sent again after a transient database failure',
    });
    const report = {
      held: (result: ObservableResult) => result.observe(sources.held(), app),
      waiters: (result: ObservableResult) => result.observe(sources.waiters(), app),
      retries: (result: ObservableResult) => result.observe(sources.retries(), app),
    };
    held.addCallback(report.held);
    waiters.addCallback(report.waiters);
    retries.addCallback(report.retries);
    this.stopObserving = () => {
      held.removeCallback(report.held);
      waiters.removeCallback(report.waiters);
      retries.removeCallback(report.retries);
    };
  }

  /**
   * The grants, busy and releases counters: observable, reading the counts kept beside each lock's attributes, so
   * that the hot path pays an increment instead of an SDK call per lock.
   */
  private observeLockCounts(): () => void {
    const counters = (['grants', 'busy', 'releases'] as const).map((key) => {
      const instrument = this.meter.createObservableCounter(`${METRIC_PREFIX}.${key}`, {
        unit: '{lock}',
        description: LOCK_COUNTER_DESCRIPTIONS[key],
      });
      const callback = (result: ObservableResult): void => {
        for (const lock of this.attributes.all()) if (lock.counts[key] > 0) result.observe(lock.counts[key], lock.base);
      };
      instrument.addCallback(callback);
      return () => instrument.removeCallback(callback);
    });
    return () => counters.forEach((stop) => stop());
  }

  /** Stops the observable instruments' callbacks (the module is shutting down). */
  close(): void {
    this.stopObserving?.();
    this.stopObserving = undefined;
    this.stopCounting?.();
    this.stopCounting = undefined;
    this.held.clear();
  }
}
