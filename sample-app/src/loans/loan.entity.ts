import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A loan (seed 002's 标的): its id is the lock name's suffix, `loan:<id>`. */
@Entity({ name: 'loans' })
export class LoanEntity {
  /** The loan's id. */
  @PrimaryColumn({ type: 'integer' })
  id!: number;

  /** Who borrowed, and what for. */
  @Column({ type: 'varchar', length: 80 })
  borrower!: string;

  /** The amount lent, in cents. */
  @Column({ name: 'principal_cents', type: 'integer' })
  principalCents!: number;

  /** What the borrower still owes, in cents; always the sum of its debts' principal. */
  @Column({ name: 'outstanding_cents', type: 'integer' })
  outstandingCents!: number;
}
