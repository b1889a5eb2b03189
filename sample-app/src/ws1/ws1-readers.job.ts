import { Inject, Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { WithLocks } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ActivityService } from '../activity/activity.service.js';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample.config.js';
import { Ws1RatesService } from './ws1-rates.service.js';

/** The name of the simulated WS1 readers in `SchedulerRegistry`. */
export const WS1_READERS_JOB = 'ws1-readers';

/**
 * Simulated web traffic on WS1's data: now and then (a third of the seconds, at random, so that it never locks step
 * with the rebuild's schedule) a "report" reads the rates under `WS1_READ` and takes a moment to render. Readers
 * share WS1 up to its read permits (5 by default): lowering WS1's read permits in the console makes them skip while
 * WS2's rebuild (which holds `WS1_READ` too) runs, live.
 */
@Injectable()
export class Ws1ReadersJob {
  constructor(
    private readonly rates: Ws1RatesService,
    private readonly activity: ActivityService,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /** Every second, one report in three. */
  @Interval(WS1_READERS_JOB, 1000)
  async tick(): Promise<void> {
    if (Math.random() < 1 / 3) await this.readReport();
  }

  /** One simulated report; skipped (by `@WithLocks`, with a log line) while WS1 is rebuilt or its reads are full. */
  @WithLocks({ locks: ['WS1_READ'], onUnavailable: 'skip' })
  async readReport(): Promise<void> {
    const read = await this.rates.read();
    await sleep(this.config.ws1ReadHoldMs);
    this.activity.record(
      WS1_READERS_JOB,
      'done',
      `report on generation ${read.generation} (${read.rates.length} rates)`,
    );
  }
}
