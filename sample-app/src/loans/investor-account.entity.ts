import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An investor's cash account: repayments credit it, transfers move money between buyer and seller. */
@Entity({ name: 'investor_accounts' })
export class InvestorAccountEntity {
  /** The investor's name. */
  @PrimaryColumn({ type: 'varchar', length: 40 })
  investor!: string;

  /** Balance in cents. */
  @Column({ name: 'balance_cents', type: 'integer' })
  balanceCents!: number;
}
