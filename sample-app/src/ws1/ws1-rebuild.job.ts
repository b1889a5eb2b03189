import { Inject, Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { WithLocks } from 'nestjs-db-locks';
import { ActivityService } from '../activity/activity.service.js';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample.config.js';
import { type Ws1Build, Ws1RatesService } from './ws1-rates.service.js';

/** The name of WS1's rebuild in `SchedulerRegistry`. */
export const WS1_REBUILD_JOB = 'ws1-rebuild';

/** How long the rebuild waits for WS1's readers to finish before it gives up on this run. */
export const WS1_REBUILD_WAIT_MS = 3000;

/**
 * Seed 000's offline job of WS1: rebuilds WS1's data under `WS1_WRITE`, so that nobody reads it meanwhile.
 * Every instance schedules it at the same seconds; the first to take `WS1_WRITE` runs it, the others skip that run.
 */
@Injectable()
export class Ws1RebuildJob {
  constructor(
    private readonly rates: Ws1RatesService,
    private readonly activity: ActivityService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /**
   * At :00, :15, :30 and :45 of every minute. While readers hold WS1, it waits for them (up to 3 s): meanwhile new
   * readers are refused (writer preference), so a steady stream of readers cannot starve it. Being a `@Cron` method,
   * it skips that run (resolves `undefined`) when `WS1_WRITE` is still not available by then (another instance is
   * rebuilding). `POST /ws1/rebuild` calls it on demand.
   */
  @Cron('*/15 * * * * *', { name: WS1_REBUILD_JOB, waitForCompletion: true })
  @WithLocks({ locks: ['WS1_WRITE'], waitMs: WS1_REBUILD_WAIT_MS })
  async rebuild(): Promise<Ws1Build | undefined> {
    const build = await this.rates.rebuild(this.config.ws1RebuildMs);
    this.activity.record(WS1_REBUILD_JOB, 'done', `wrote generation ${build.generation} in ${build.tookMs} ms`);
    return build;
  }
}
