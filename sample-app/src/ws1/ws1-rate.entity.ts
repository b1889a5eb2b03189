import { Column, Entity, PrimaryColumn } from 'typeorm';
import { NUMERIC_AS_NUMBER } from '../database/numeric.transformer.js';

/** One of WS1's exchange rates (per EUR). WS1's offline job rebuilds the whole table under `WS1_WRITE`. */
@Entity({ name: 'ws1_rates' })
export class Ws1RateEntity {
  /** ISO currency code. */
  @PrimaryColumn({ type: 'varchar', length: 3 })
  currency!: string;

  /** Units of `currency` per EUR. */
  @Column({ type: 'numeric', precision: 14, scale: 6, transformer: NUMERIC_AS_NUMBER })
  rate!: number;

  /** Which rebuild wrote it; a consistent read sees one generation only. */
  @Column({ type: 'integer' })
  generation!: number;

  /** When it was written (database time; the column's default, in each dialect's type: see the migration). */
  @Column({ name: 'built_at', type: 'timestamp', insert: false })
  builtAt!: Date;
}
