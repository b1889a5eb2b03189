import { Inject, Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { WithLocks } from 'nestjs-db-locks';
import { ActivityService } from '../activity/activity.service.js';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample.config.js';
import { type Ws1Build, Ws1RatesService } from './ws1-rates.service.js';

/** The name of WS1's rebuild in `SchedulerRegistry`. */
export const WS1_REBUILD_JOB = 'ws1-rebuild';

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
   * At :00, :15, :30 and :45 of every minute. Being a `@Cron` method, it skips (resolves `undefined`) when
   * `WS1_WRITE` is not available: some reader or writer holds WS1 somewhere. `POST /ws1/rebuild` calls it on demand.
   */
  @Cron('*/15 * * * * *', { name: WS1_REBUILD_JOB, waitForCompletion: true })
  @WithLocks('WS1_WRITE')
  async rebuild(): Promise<Ws1Build | undefined> {
    const build = await this.rates.rebuild(this.config.ws1RebuildMs);
    this.activity.record(WS1_REBUILD_JOB, 'done', `wrote generation ${build.generation} in ${build.tookMs} ms`);
    return build;
  }
}
