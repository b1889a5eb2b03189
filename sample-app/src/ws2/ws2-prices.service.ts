import { ConflictException, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Repository } from 'typeorm';
import type { Ws1Rates } from '../ws1/ws1-rates.service.js';
import { WS2_CATALOGUE } from './ws2-catalogue.js';
import { Ws2PriceEntity } from './ws2-price.entity.js';

/** WS2's data as a reader gets it. */
export interface Ws2Prices {
  /** The generation of WS1's rates the prices come from (`null` when there are none). */
  readonly ws1Generation: number | null;
  readonly prices: ReadonlyArray<{ readonly product: string; readonly currency: string; readonly price: number }>;
}

/** What one WS2 rebuild wrote. */
export interface Ws2Build {
  readonly ws1Generation: number;
  readonly prices: number;
  readonly tookMs: number;
}

/** WS2's data access; callers hold the locks (`WS2_READ` to read, `WS2_WRITE` + `WS1_READ` to rebuild). */
@Injectable()
export class Ws2PricesService {
  constructor(@InjectRepository(Ws2PriceEntity) private readonly prices: Repository<Ws2PriceEntity>) {}

  /** Reads every price. */
  async read(): Promise<Ws2Prices> {
    const rows = await this.prices.find({ order: { product: 'ASC', currency: 'ASC' } });
    return {
      ws1Generation: rows.length === 0 ? null : Math.max(...rows.map((row) => row.ws1Generation)),
      prices: rows.map(({ product, currency, price }) => ({ product, currency, price })),
    };
  }

  /**
   * Rewrites the price list from WS1's `rates` (read by the caller under `WS1_READ`), product by product, over
   * `durationMs`.
   * @throws ConflictException when WS1's table is not one complete generation: a WS1 rebuild died half-way (its lock
   *   came back by lease or restart, its data did not); the next WS1 rebuild repairs it.
   */
  async rebuild(rates: Ws1Rates, durationMs: number): Promise<Ws2Build> {
    const started = Date.now();
    if (rates.generation === null || !rates.complete || rates.generations !== 1) {
      throw new ConflictException(
        `WS1's rates are not one complete generation (${rates.rates.length} rows): not pricing`,
      );
    }
    const ws1Generation = rates.generation;
    await this.prices.createQueryBuilder().delete().from(Ws2PriceEntity).execute();
    const step = durationMs / WS2_CATALOGUE.length;
    for (const { product, eur } of WS2_CATALOGUE) {
      await sleep(step);
      await this.prices.insert(
        rates.rates.map(({ currency, rate }) => ({
          product,
          currency,
          price: Math.round(eur * rate * 100) / 100,
          ws1Generation,
        })),
      );
    }
    return { ws1Generation, prices: WS2_CATALOGUE.length * rates.rates.length, tookMs: Date.now() - started };
  }
}
