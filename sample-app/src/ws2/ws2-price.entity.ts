import { Column, Entity, PrimaryColumn } from 'typeorm';
import { NUMERIC_AS_NUMBER } from '../database/numeric.transformer.js';

/** One of WS2's prices: a product in a currency, computed from WS1's rates under `WS2_WRITE` + `WS1_READ`. */
@Entity({ name: 'ws2_prices' })
export class Ws2PriceEntity {
  /** Product name from the catalogue. */
  @PrimaryColumn({ type: 'varchar', length: 40 })
  product!: string;

  /** ISO currency code. */
  @PrimaryColumn({ type: 'varchar', length: 3 })
  currency!: string;

  /** Price in `currency`. */
  @Column({ type: 'numeric', precision: 14, scale: 2, transformer: NUMERIC_AS_NUMBER })
  price!: number;

  /** The generation of WS1's rates it was computed from. */
  @Column({ name: 'ws1_generation', type: 'integer' })
  ws1Generation!: number;
}
