import { Inject, Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { WithLocks } from 'nestjs-db-locks';
import { ActivityService } from '../activity/activity.service.js';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample.config.js';
import { Ws1RatesService } from '../ws1/ws1-rates.service.js';
import { type Ws2Build, Ws2PricesService } from './ws2-prices.service.js';

/** The name of WS2's rebuild in `SchedulerRegistry`. */
export const WS2_REBUILD_JOB = 'ws2-rebuild';

/**
 * Seed 000's "typical WebService2": it writes its own data and reads WS1's, so it takes the group
 * `WS2_WRITE` + `WS1_READ`, all or nothing. While WS1 rebuilds (`WS1_WRITE` held), the group is refused whole and
 * this run is skipped; nothing is half-taken.
 */
@Injectable()
export class Ws2RebuildJob {
  constructor(
    private readonly ws1: Ws1RatesService,
    private readonly prices: Ws2PricesService,
    private readonly activity: ActivityService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /**
   * At :02, :22, :37 and :52 of every minute. At :02 it meets WS1's rebuild (started at :00, 5 s long): the group is
   * refused and the run skipped. `POST /ws2/rebuild` calls it on demand.
   */
  @Cron('2,22,37,52 * * * * *', { name: WS2_REBUILD_JOB, waitForCompletion: true })
  @WithLocks('WS2_WRITE', 'WS1_READ')
  async rebuild(): Promise<Ws2Build | undefined> {
    const build = await this.prices.rebuild(await this.ws1.read(), this.config.ws2RebuildMs);
    this.activity.record(
      WS2_REBUILD_JOB,
      'done',
      `priced ${build.prices} items from WS1 generation ${build.ws1Generation}`,
    );
    return build;
  }
}
