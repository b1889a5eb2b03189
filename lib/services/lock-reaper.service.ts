import { Inject, Injectable, Logger } from '@nestjs/common';
import { LockTablesMissingError } from '../errors/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockStore } from '../store/lock.store.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';

/** Reaping batches per run: one run stays short even after an outage; the next run continues. */
const MAX_BATCHES = 50;

/**
 * Log rows deleted per pruning statement. Large: pruning must keep up with the grant rate of every instance at once
 * (thousands per second each), at one statement per few thousand rows. @internal
 */
export const PRUNE_BATCH_ROWS = 5000;

/**
 * Instance rows retired per reaper run at most (one statement each): a deploy's worth of pod names; a backlog drains
 * over a few runs. @internal
 */
export const RETIRE_INSTANCES_PER_RUN = 100;

/**
 * Frees stale grants of any instance (lease expired, or held past `maxHoldMs`) in short batches, prunes old
 * log rows and retires the rows of instances long gone. Safe to run on every node at once: see `locking_reap`.
 * @internal
 */
@Injectable()
export class LockReaper {
  private readonly logger = new Logger('LockReaper');

  constructor(
    @Inject(LockStore) private readonly store: LockStore,
    private readonly telemetry: LockTelemetry,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
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

  /**
   * Prunes ended log rows older than `logRetentionMs`, batch after batch while batches come back full, for at most
   * half the reaper's interval (then the next run goes on): retention holds at any sustained grant rate whose
   * pruning fits in that budget, and a backlog (after an outage, or when retention is shortened) drains over a few
   * runs without one run monopolising a connection. Then retires the instance rows of app ids long gone
   * (`retireInstances`). Returns how many log rows were deleted.
   */
  async pruneLog(): Promise<number> {
    const deadline = performance.now() + this.options.reaperIntervalMs / 2;
    let total = 0;
    for (;;) {
      const pruned = await this.store.pruneLog(PRUNE_BATCH_ROWS);
      total += pruned;
      if (pruned < PRUNE_BATCH_ROWS || performance.now() >= deadline) break;
    }
    await this.retireInstances();
    return total;
  }

  /**
   * Deletes (up to `RETIRE_INSTANCES_PER_RUN`) the `locking_instances` rows of app ids whose instance is gone (nobody
   * holds the app id), that have no grant and no waiter, and were last claimed more than `instanceRetentionMs` ago:
   * with pod names as `appId`, every deploy leaves some. Nothing is lost: the row only lets a restart of that app id
   * on the same machine free its grants at once, and it has none. Returns how many were retired.
   */
  async retireInstances(): Promise<number> {
    const retired = await this.store.retireInstances(RETIRE_INSTANCES_PER_RUN).catch((error: unknown) => {
      // Migrated before the instances table existed: nothing to retire (start-up warns about it).
      if (error instanceof LockTablesMissingError) return 0;
      throw error;
    });
    if (retired > 0) this.logger.log(`Retired ${retired} instance row(s) of app ids gone for over instanceRetentionMs`);
    return retired;
  }
}
