import type { Logger } from '@nestjs/common';
import type { TickPlan } from './job-tick.plan.js';

/** How often one job's clock-skew warning may repeat. */
const SKEW_WARNING_EVERY_MS = 60_000;

/**
 * Warns, once a minute per job, when this replica's clock is further from the database's than the bound its ticks are
 * guaranteed for. Fed with the database clock of whatever a tick does first (its pre-check, its claim), so that the
 * replica whose clock is off says so itself, whether it runs the tick or not, ahead or behind.
 * @internal
 */
export class JobSkewWarner {
  private readonly warnedAt = new Map<string, number>();

  constructor(private readonly logger: Logger) {}

  /**
   * Compares the database clock `dbNow` (epoch ms) with this replica's clock at the same instant: `sentAt` and
   * `answeredAt` are the replica's clock when the statement that read it was sent and answered (the database read its
   * clock in between).
   */
  check(plan: TickPlan, dbNow: number, sentAt: number, answeredAt: number): void {
    const bound = plan.skewBoundMs;
    if (bound === undefined || !Number.isFinite(bound) || !Number.isFinite(dbNow)) return;
    const skew = (sentAt + answeredAt) / 2 - dbNow;
    if (Math.abs(skew) <= bound) return;
    const last = this.warnedAt.get(plan.job) ?? -Infinity;
    if (answeredAt - last < SKEW_WARNING_EVERY_MS && answeredAt >= last) return;
    this.warnedAt.set(plan.job, answeredAt);
    this.logger.warn(
      `${plan.job}: this replica's clock is ${Math.round(Math.abs(skew))} ms ${skew > 0 ? 'ahead of' : 'behind'} the ` +
        `database's, beyond the ±${Math.round(bound)} ms its ticks are guaranteed for: synchronise it (NTP)`,
    );
  }
}
