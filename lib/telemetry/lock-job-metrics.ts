import type { Attributes, Counter, Meter, ObservableGauge, ObservableResult } from '@opentelemetry/api';
import { METRIC_PREFIX } from './lock-metrics.service.js';

/** How a tick of a scheduled job ended on this replica, as the runs counter names it. @internal */
export type JobTickOutcome = 'succeeded' | 'failed' | 'lock-lost' | 'skipped-busy' | 'skipped-elsewhere' | 'paused';

/** Seconds since each job's last successful run (fleet-wide, database clock), by job. @internal */
export type JobSuccessAges = () => ReadonlyMap<string, number>;

/**
 * The instruments of scheduled jobs: `nestjs_db_locks.job.runs` (ticks by job and outcome, counted by the replica
 * that ran or skipped them) and `nestjs_db_locks.job.last_success.age` (seconds since the job's last successful run
 * anywhere in the fleet, as replica `app.id` last read or recorded it: the gauge to alert on, with the minimum across
 * replicas), and `nestjs_db_locks.job.manual_runs` ("run now" runs this replica ran, by job and outcome).
 * @internal
 */
export class LockJobMetrics {
  private readonly runs: Counter;
  private readonly manualRuns: Counter;
  private readonly age: ObservableGauge;
  private readonly attributes = new Map<string, Attributes>();
  private stop?: () => void;

  constructor(
    meter: Meter,
    private readonly appId: string,
  ) {
    this.runs = meter.createCounter(`${METRIC_PREFIX}.job.runs`, {
      unit: '{tick}',
      description: 'Ticks of scheduled @WithLocks jobs this replica came to, by job and outcome',
    });
    this.manualRuns = meter.createCounter(`${METRIC_PREFIX}.job.manual_runs`, {
      unit: '{run}',
      description: 'Runs of scheduled @WithLocks jobs requested with "run now" that this replica ran, by job and outcome',
    });
    this.age = meter.createObservableGauge(`${METRIC_PREFIX}.job.last_success.age`, {
      unit: 's',
      description: "Seconds since the job's last successful run on any replica",
    });
  }

  /** Counts one tick of `job` that ended with `outcome`, or one "run now" of it when `manual`. */
  ran(job: string, outcome: JobTickOutcome, manual = false): void {
    const key = `${job}\u0000${outcome}`;
    let attributes = this.attributes.get(key);
    if (!attributes) {
      attributes = { job, outcome, 'app.id': this.appId };
      this.attributes.set(key, attributes);
    }
    (manual ? this.manualRuns : this.runs).add(1, attributes);
  }

  /** Reports the ages from `ages` at every collection. */
  observe(ages: JobSuccessAges): void {
    this.stop?.();
    const callback = (result: ObservableResult): void => {
      for (const [job, seconds] of ages()) result.observe(seconds, { job, 'app.id': this.appId });
    };
    this.age.addCallback(callback);
    this.stop = () => this.age.removeCallback(callback);
  }

  /** Stops the gauge's callback. */
  close(): void {
    this.stop?.();
    this.stop = undefined;
  }
}
