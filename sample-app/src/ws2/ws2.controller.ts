import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { LockNotAcquiredError, WithLocks } from 'nestjs-db-locks';
import { type Ws2Build, type Ws2Prices, Ws2PricesService } from './ws2-prices.service.js';
import { Ws2RebuildJob } from './ws2-rebuild.job.js';

/** WS2's web endpoints. */
@Controller('ws2')
export class Ws2Controller {
  constructor(
    private readonly prices: Ws2PricesService,
    private readonly job: Ws2RebuildJob,
  ) {}

  /** WS2's prices, read under `WS2_READ`: HTTP 423 while WS2 rebuilds. */
  @Get('prices')
  @WithLocks({ locks: ['WS2_READ'], retryAfterSeconds: 2 })
  async readPrices(): Promise<Ws2Prices> {
    return this.prices.read();
  }

  /** Runs WS2's rebuild now and answers when it is done; HTTP 423 when `WS2_WRITE` + `WS1_READ` is not available. */
  @Post('rebuild')
  @HttpCode(200)
  async rebuild(): Promise<Ws2Build> {
    const build = await this.job.rebuild();
    if (!build) {
      throw new LockNotAcquiredError(
        [
          { name: 'WS1', mode: 'read' },
          { name: 'WS2', mode: 'write' },
        ],
        'Ws2RebuildJob.rebuild',
        2,
      );
    }
    return build;
  }
}
