import { ConflictException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { LockService, WithLocks, type LockMode, type LockRequest } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type EntityManager, MoreThanOrEqual } from 'typeorm';
import { SAMPLE_CONFIG, type SampleConfig } from '../config/sample.config.js';
import { SAMPLE_SQL, sampleDialectOf } from '../database/sample-dialect.js';
import { DebtEntity } from './debt.entity.js';
import { InvestorAccountEntity } from './investor-account.entity.js';
import type { RepaymentInput, TransferInput } from './loan-input.util.js';
import { LoanOperationEntity, type LoanOperationKind } from './loan-operation.entity.js';
import { LoanEntity } from './loan.entity.js';
import { splitProRata } from './pro-rata.util.js';

/** A loan with its debts, as `GET /loans` shows it. */
export interface LoanView {
  readonly id: number;
  readonly borrower: string;
  readonly principalCents: number;
  readonly outstandingCents: number;
  readonly debts: ReadonlyArray<{ readonly id: number; readonly investor: string; readonly principalCents: number }>;
  /** The books balance: the debts' principal adds up to what is outstanding. */
  readonly balanced: boolean;
}

/** The lock of one loan: `loan:<id>`. */
export function loanLock(loanId: number, mode: LockMode): LockRequest {
  return { name: `loan:${loanId}`, mode };
}

/**
 * Seed 002's two businesses on a loan: a repayment (the borrower pays; every debt of the loan and its holder's
 * account change) under the loan's **write** lock, and a debt transfer (an investor sells a debt) under its **read**
 * lock. Transfers of one loan may run together; a repayment runs alone.
 *
 * Each runs as a fenced transaction (`@WithLocks({ locks, transaction: true })`): the loan's lock is taken without
 * waiting (busy means HTTP 423), the business work runs in one database transaction that ends with the lock log's
 * "business done", then it commits and the lock is released. If the lock was reaped meanwhile (its holder froze past
 * its lease), the whole transaction rolls back and the call fails with `LockLostError` (HTTP 409): nothing is
 * half-done under a lock somebody else may now hold.
 */
@Injectable()
export class LoansService {
  constructor(
    private readonly locks: LockService,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /** Every loan with its debts. */
  async list(): Promise<LoanView[]> {
    const loans = await this.dataSource.getRepository(LoanEntity).find({ order: { id: 'ASC' } });
    const debts = await this.dataSource.getRepository(DebtEntity).find({ order: { id: 'ASC' } });
    return loans.map((loan) => {
      const own = debts.filter((debt) => debt.loanId === loan.id);
      return {
        ...loan,
        debts: own.map(({ id, investor, principalCents }) => ({ id, investor, principalCents })),
        balanced: own.reduce((sum, debt) => sum + debt.principalCents, 0) === loan.outstandingCents,
      };
    });
  }

  /** The newest operations of a loan. */
  async operations(loanId: number, limit = 20): Promise<LoanOperationEntity[]> {
    await assertLoan(this.dataSource.manager, loanId);
    return this.dataSource
      .getRepository(LoanOperationEntity)
      .find({ where: { loanId }, order: { id: 'DESC' }, take: limit });
  }

  /**
   * The borrower repays `amountCents`, split over the loan's debts in proportion to their principal; each holder's
   * account is credited. Reads the loan, waits for "the bank", then writes what it read minus the amount: correct
   * only because the write lock keeps every other repayment and transfer of this loan out meanwhile.
   */
  @WithLocks({ locks: (loanId: number) => [loanLock(loanId, 'write')], transaction: true, retryAfterSeconds: 1 })
  async repay(loanId: number, { amountCents }: RepaymentInput): Promise<LoanOperationEntity> {
    const { manager, stamp } = await this.business(loanId);
    const startedAt = await databaseNow(manager);
    const loan = await manager.findOneByOrFail(LoanEntity, { id: loanId });
    if (amountCents > loan.outstandingCents) {
      throw new ConflictException(
        `loan ${loanId} has ${loan.outstandingCents} cents outstanding, less than ${amountCents}`,
      );
    }
    const debts = await manager.find(DebtEntity, { where: { loanId }, order: { id: 'ASC' } });
    await sleep(this.config.repaymentMs); // the bank transfer of seed 002, slow on purpose
    const parts = splitProRata(
      amountCents,
      debts.map((debt) => debt.principalCents),
    );
    await lockAccounts(
      manager,
      debts.filter((_, index) => (parts[index] ?? 0) > 0).map((debt) => debt.investor),
    );
    for (const [index, debt] of debts.entries()) {
      const part = parts[index] ?? 0;
      if (part === 0) continue;
      await manager.update(DebtEntity, { id: debt.id }, { principalCents: debt.principalCents - part });
      await credit(manager, debt.investor, part);
    }
    await manager.update(LoanEntity, { id: loanId }, { outstandingCents: loan.outstandingCents - amountCents });
    return record(
      manager,
      { loanId, kind: 'repayment', stamp, amountCents, debtId: null, startedAt },
      this.config.appId,
    );
  }

  /**
   * An investor sells one debt of the loan to `to` for `priceCents`. Under the loan's read lock: no repayment can
   * change the debt meanwhile, while other transfers of the same loan may run alongside (up to its read permits).
   */
  @WithLocks({ locks: (loanId: number) => [loanLock(loanId, 'read')], transaction: true, retryAfterSeconds: 1 })
  async transfer(loanId: number, { debtId, to, priceCents }: TransferInput): Promise<LoanOperationEntity> {
    const { manager, stamp } = await this.business(loanId);
    const startedAt = await databaseNow(manager);
    const debt = await manager.findOneBy(DebtEntity, { id: debtId, loanId });
    if (!debt) throw new NotFoundException(`loan ${loanId} has no debt ${debtId}`);
    if (debt.investor === to) throw new ConflictException(`${to} already holds debt ${debtId}`);
    if (!(await manager.existsBy(InvestorAccountEntity, { investor: to })))
      throw new NotFoundException(`no investor ${to}`);
    await sleep(this.config.transferMs); // the contract paperwork, slow on purpose
    await lockAccounts(manager, [to, debt.investor]);
    const sold = await manager.update(DebtEntity, { id: debtId, investor: debt.investor }, { investor: to });
    if (sold.affected !== 1) throw new ConflictException(`debt ${debtId} was sold by another transfer meanwhile`);
    const paid = await manager.decrement(
      InvestorAccountEntity,
      { investor: to, balanceCents: MoreThanOrEqual(priceCents) },
      'balanceCents',
      priceCents,
    );
    if (paid.affected !== 1) throw new ConflictException(`${to} cannot pay ${priceCents} cents`);
    await credit(manager, debt.investor, priceCents);
    return record(
      manager,
      { loanId, kind: 'transfer', stamp, amountCents: priceCents, debtId, startedAt },
      this.config.appId,
    );
  }

  /** The fenced transaction's manager and the loan lock's stamp, once the loan is known to exist. */
  private async business(loanId: number): Promise<{ manager: EntityManager; stamp: number }> {
    const manager = this.locks.currentManager();
    await assertLoan(manager, loanId);
    return { manager, stamp: this.locks.currentLock()!.stamp };
  }
}

async function assertLoan(manager: EntityManager, loanId: number): Promise<void> {
  if (!(await manager.existsBy(LoanEntity, { id: loanId }))) throw new NotFoundException(`no loan ${loanId}`);
}

/**
 * Locks the accounts of `investors` for the rest of the business transaction, in investor order, before any of them
 * changes. Operations on different loans run at the same time (each holds only its own loan's lock) and move money
 * between the same investors' accounts: taking those rows in one fixed order means two operations can wait for each
 * other only in a line, never in a cycle, which the database would break by aborting one of them (PostgreSQL's
 * `deadlock detected`, InnoDB's `ER_LOCK_DEADLOCK`). `FOR UPDATE` with `ORDER BY` locks the rows in the sorted order:
 * PostgreSQL applies the locking clause after sorting, and InnoDB locks them as it reads the primary key in order.
 */
async function lockAccounts(manager: EntityManager, investors: readonly string[]): Promise<void> {
  if (investors.length === 0) return;
  await manager
    .createQueryBuilder(InvestorAccountEntity, 'account')
    .select('account.investor')
    .where('account.investor IN (:...investors)', { investors: [...new Set(investors)] })
    .orderBy('account.investor')
    .setLock('pessimistic_write')
    .getRawMany();
}

/** The database clock now (not the transaction's start), in the dialect of `manager`'s DataSource. */
async function databaseNow(manager: EntityManager): Promise<Date> {
  const rows: Array<{ now: Date }> = await manager.query(SAMPLE_SQL[sampleDialectOf(manager.dataSource)].now);
  const now = rows[0]?.now;
  if (!now) throw new Error('the database did not tell the time');
  return now;
}

async function credit(manager: EntityManager, investor: string, cents: number): Promise<void> {
  await manager.increment(InvestorAccountEntity, { investor }, 'balanceCents', cents);
}

async function record(
  manager: EntityManager,
  operation: {
    loanId: number;
    kind: LoanOperationKind;
    stamp: number;
    amountCents: number;
    debtId: number | null;
    startedAt: Date;
  },
  appId: string,
): Promise<LoanOperationEntity> {
  const finishedAt = await databaseNow(manager);
  return manager.save(manager.create(LoanOperationEntity, { ...operation, appId, finishedAt }));
}
