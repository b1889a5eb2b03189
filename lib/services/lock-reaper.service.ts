import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockStore } from '../store/lock.store.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';

/** Batches per run: one run stays short even after an outage; the next run continues. */
const MAX_BATCHES = 50;

/**
 * Frees stale grants of any instance (lease expired, or held past `maxHoldMs`) in short batches, and prunes old
 * log rows. Safe to run on every node at once: see `locking_reap`.
 * @internal
 */
@Injectable()
export class LockReaper {
  private readonly logger = new Logger('LockReaper');

  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly telemetry: LockTelemetry,
  ) {}

  /** Reaps batch by batch until no stale grant is left (at most `MAX_BATCHES`); returns how many were reaped. */
  async reapStale(): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < MAX_BATCHES; batch++) {
      const reaped = await this.store.reap();
      if (reaped.length > 0) this.logger.warn(`Reaped stale grant(s) ${reaped.join(', ')}`);
      this.telemetry.reaped(reaped.length);
      total += reaped.length;
      if (reaped.length === 0) break;
    }
    return total;
  }

  /** Prunes old ended log rows batch by batch; returns how many were deleted. */
  async pruneLog(): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < MAX_BATCHES; batch++) {
      const pruned = await this.store.pruneLog();
      total += pruned;
      if (pruned === 0) break;
    }
    return total;
  }
}
