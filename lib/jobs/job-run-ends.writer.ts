import type { Logger } from '@nestjs/common';
import type { JobRunStore, RunEnd } from '../store/job-runs.store.js';

/** The first retry of an end that could not be written, then doubled up to `MAX_BACKOFF_MS`. */
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 4000;
/** How long an end is kept for a late write, at least (a few leases when they are longer). */
const KEEP_MS = 60_000;
/** Ends kept at most: beyond, the oldest is given up. */
const MAX_PENDING = 1000;
/** How long shutdown gives the last try of the ends still pending. */
const SHUTDOWN_TRY_MS = 2000;

/** An end to write late. @internal */
export interface PendingRunEnd {
  readonly job: string;
  readonly schedule: string;
  readonly tick: number;
  readonly stamp: number;
  readonly end: RunEnd;
  /** When the run ended (`performance.now()`): the success is dated then, not at the late write. */
  readonly endedAt: number;
}

/**
 * Keeps the ends of runs that could not be written when they ended (the database away) and writes them once it is
 * back: retried with backoff for a bounded time (`KEEP_MS`, or three leases when longer) and a bounded number of ends,
 * then given up with one error line each. An end matches its run by (job, tick, stamp), so it may be written after
 * the run's grant is gone. Shutdown gives the ends still pending one last, bounded try.
 * @internal
 */
export class JobRunEndsWriter {
  private readonly pending: PendingRunEnd[] = [];
  private timer: NodeJS.Timeout | undefined;
  private backoffMs = FIRST_BACKOFF_MS;
  private writing: Promise<void> | undefined;
  private stopped = false;
  private readonly keepMs: number;

  constructor(
    private readonly store: JobRunStore,
    private readonly logger: Logger,
    leaseMs: number,
  ) {
    this.keepMs = Math.max(KEEP_MS, 3 * leaseMs);
  }

  /** How many ends wait for their write. */
  get size(): number {
    return this.pending.length;
  }

  /** Keeps `end` for a late write. */
  add(end: PendingRunEnd): void {
    if (this.stopped) return this.giveUp(end, 'the application shut down');
    this.pending.push(end);
    if (this.pending.length > MAX_PENDING) this.giveUp(this.pending.shift()!, `more than ${MAX_PENDING} ends waited`);
    if (this.timer === undefined && this.writing === undefined) this.schedule();
  }

  /** The last try at shutdown (before the pool closes), bounded; what is still pending then is given up. */
  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    let bounded: NodeJS.Timeout | undefined;
    await Promise.race([
      (async () => {
        await this.writing;
        if (this.pending.length > 0) await this.writeAll();
      })(),
      new Promise<void>((resolve) => {
        bounded = setTimeout(resolve, SHUTDOWN_TRY_MS);
      }),
    ]);
    clearTimeout(bounded);
    for (const end of this.pending.splice(0)) this.giveUp(end, 'the application shut down');
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.writeAll().finally(() => {
        this.writing = undefined;
        if (this.stopped || this.pending.length === 0) return;
        this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
        this.schedule();
      });
    }, this.backoffMs);
    this.timer.unref();
  }

  /** Writes the pending ends, oldest first, until one fails (the database is still away: the rest waits too). */
  private async writeAll(): Promise<void> {
    while (this.pending.length > 0) {
      const end = this.pending[0]!;
      if (performance.now() - end.endedAt > this.keepMs) {
        this.pending.shift();
        this.giveUp(end, `not written within ${Math.round(this.keepMs / 1000)} s`);
        continue;
      }
      try {
        await this.store.endRunLate(end.job, end.schedule, end.tick, end.stamp, end.end, performance.now() - end.endedAt);
      } catch {
        return;
      }
      if (this.pending[0] === end) this.pending.shift();
      this.backoffMs = FIRST_BACKOFF_MS;
      this.logger.log(`${end.job}: recorded the end of tick ${new Date(end.tick).toISOString()} (${end.end.outcome}) late`);
    }
  }

  private giveUp(end: PendingRunEnd, why: string): void {
    this.logger.error(
      `${end.job}: gave up recording the end of tick ${new Date(end.tick).toISOString()} (${end.end.outcome}): ${why}`,
    );
  }
}
