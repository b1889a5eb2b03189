import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A debt (seed 002's 债权): the part of a loan one investor holds. Repayments pay it down; transfers sell it. */
@Entity({ name: 'debts' })
export class DebtEntity {
  /** The debt's id. */
  @PrimaryGeneratedColumn()
  id!: number;

  /** The loan it is a part of. */
  @Column({ name: 'loan_id', type: 'integer' })
  loanId!: number;

  /** Who holds it now. */
  @Column({ type: 'varchar', length: 40 })
  investor!: string;

  /** What the borrower still owes on it, in cents. */
  @Column({ name: 'principal_cents', type: 'integer' })
  principalCents!: number;
}
