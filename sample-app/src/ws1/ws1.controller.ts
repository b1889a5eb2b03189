import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { LockNotAcquiredError, WithLocks } from 'nestjs-db-locks';
import { type Ws1Build, type Ws1Rates, Ws1RatesService } from './ws1-rates.service.js';
import { Ws1RebuildJob } from './ws1-rebuild.job.js';

/** WS1's web endpoints. */
@Controller('ws1')
export class Ws1Controller {
  constructor(
    private readonly rates: Ws1RatesService,
    private readonly job: Ws1RebuildJob,
  ) {}

  /** WS1's rates, read under `WS1_READ`: HTTP 423 (Retry-After: 2) while WS1 rebuilds or its read permits are full. */
  @Get('rates')
  @WithLocks({ locks: ['WS1_READ'], retryAfterSeconds: 2 })
  async readRates(): Promise<Ws1Rates> {
    return this.rates.read();
  }

  /**
   * Runs WS1's rebuild now and answers when it is done; HTTP 423 when `WS1_WRITE` is not available within the
   * rebuild's wait (3 s).
   */
  @Post('rebuild')
  @HttpCode(200)
  async rebuild(): Promise<Ws1Build> {
    const build = await this.job.rebuild();
    if (!build) throw new LockNotAcquiredError([{ name: 'WS1', mode: 'write' }], 'Ws1RebuildJob.rebuild', 2);
    return build;
  }
}
