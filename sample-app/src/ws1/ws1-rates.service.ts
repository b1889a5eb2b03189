import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Repository } from 'typeorm';
import { rateOf, WS1_BASE_RATES } from './ws1-base-rates.js';
import { Ws1RateEntity } from './ws1-rate.entity.js';

/** WS1's data as a reader gets it. */
export interface Ws1Rates {
  /** The generation of every row read (`null` when the table is empty). */
  readonly generation: number | null;
  /** How many generations the rows came from: 1 for a consistent read. */
  readonly generations: number;
  /** Whether every currency of WS1 is there. */
  readonly complete: boolean;
  readonly rates: ReadonlyArray<{ readonly currency: string; readonly rate: number }>;
}

/** What one rebuild wrote. */
export interface Ws1Build {
  readonly generation: number;
  readonly currencies: number;
  readonly tookMs: number;
}

/**
 * WS1's data access. It takes no locks itself: the callers (`Ws1Controller`, `Ws1RebuildJob`, WS2's job) declare
 * the locks their work needs, which is what makes the step-by-step rebuild safe to read.
 */
@Injectable()
export class Ws1RatesService {
  constructor(@InjectRepository(Ws1RateEntity) private readonly rates: Repository<Ws1RateEntity>) {}

  /** Reads every rate (callers hold `WS1_READ` or `WS1_WRITE`). */
  async read(): Promise<Ws1Rates> {
    const rows = await this.rates.find({ order: { currency: 'ASC' } });
    const generations = new Set(rows.map((row) => row.generation));
    return {
      generation: rows.length === 0 ? null : Math.max(...generations),
      generations: generations.size,
      complete: rows.length === WS1_BASE_RATES.length,
      rates: rows.map(({ currency, rate }) => ({ currency, rate })),
    };
  }

  /**
   * Seed 000's offline work: empties the table and writes the next generation one currency at a time, each step
   * committed on its own and the whole spread over `durationMs`. Half-way through, the table is incomplete: only a
   * reader that respects `WS1_WRITE` is sure never to see it (callers hold `WS1_WRITE`).
   */
  async rebuild(durationMs: number): Promise<Ws1Build> {
    const started = Date.now();
    const latest = await this.rates
      .createQueryBuilder('r')
      .select('MAX(r.generation)', 'max')
      .getRawOne<{ max: number | null }>();
    const generation = (latest?.max ?? 0) + 1;
    await this.rates.createQueryBuilder().delete().from(Ws1RateEntity).execute();
    const step = durationMs / WS1_BASE_RATES.length;
    for (const [index, [currency, base]] of WS1_BASE_RATES.entries()) {
      await sleep(step);
      await this.rates.insert({ currency, rate: rateOf(base, index, generation), generation });
    }
    return { generation, currencies: WS1_BASE_RATES.length, tookMs: Date.now() - started };
  }
}
