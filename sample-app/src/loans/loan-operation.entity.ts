import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { NUMERIC_AS_NUMBER } from '../database/numeric.transformer.js';

/** What a loan operation was. */
export type LoanOperationKind = 'repayment' | 'transfer';

/**
 * The record of one repayment or transfer, written inside its business transaction with database timestamps taken
 * when the business work started and when it finished: the evidence that a repayment never overlaps a transfer.
 */
@Entity({ name: 'loan_operations' })
export class LoanOperationEntity {
  /** The operation's id. */
  @PrimaryGeneratedColumn()
  id!: number;

  /** The loan it worked on. */
  @Column({ name: 'loan_id', type: 'integer' })
  loanId!: number;

  /** `repayment` (under the loan's write lock) or `transfer` (under its read lock). */
  @Column({ type: 'varchar', length: 10 })
  kind!: LoanOperationKind;

  /** The instance that ran it. */
  @Column({ name: 'app_id', type: 'varchar', length: 200 })
  appId!: string;

  /** The stamp of the lock it ran under. */
  @Column({ type: 'bigint', transformer: NUMERIC_AS_NUMBER })
  stamp!: number;

  /** The repayment's amount, or the transfer's price, in cents. */
  @Column({ name: 'amount_cents', type: 'integer' })
  amountCents!: number;

  /** The debt a transfer sold; null for a repayment. */
  @Column({ name: 'debt_id', type: 'integer', nullable: true })
  debtId!: number | null;

  /**
   * Database time when the business work began (`timestamptz` on PostgreSQL, `DATETIME(6)` in UTC on MySQL /
   * MariaDB: `timestamp` is the type name TypeORM accepts on both).
   */
  @Column({ name: 'started_at', type: 'timestamp' })
  startedAt!: Date;

  /** Database time when the business work ended (just before "business done" and the commit). */
  @Column({ name: 'finished_at', type: 'timestamp' })
  finishedAt!: Date;
}
