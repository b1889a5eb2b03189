import { ConflictException, Injectable, Logger } from '@nestjs/common';
import {
  IllegalMonitorStateError,
  LockLostError,
  LockNotAcquiredError,
  LockService,
  type LockMode,
  type LockRequest,
} from 'nestjs-db-locks';
import { DataSource, type EntityManager } from 'typeorm';

/** The lock of one loan: `loan:<id>`, the resource X of seed 002. */
export function loanLock(loanId: number, mode: LockMode): LockRequest {
  return { name: `loan:${loanId}`, mode };
}

/**
 * Seed 002's protocol for one business operation on a loan:
 * 1. take the loan's lock (write for a repayment, read for a transfer) — no wait: busy means HTTP 423;
 * 2. run the business work in **one database transaction**, and as its last statement record the lock log's
 *    "business done" (`markBusinessDone`) in that same transaction;
 * 3. commit, then release the lock.
 * If the lock was reaped meanwhile (its holder froze past its lease), step 2 throws `LockLostError` and the whole
 * business transaction rolls back: nothing is half-done under a lock somebody else may now hold.
 */
@Injectable()
export class LoanBusinessRunner {
  private readonly logger = new Logger('LoanBusinessRunner');

  constructor(
    private readonly locks: LockService,
    private readonly dataSource: DataSource,
  ) {}

  /**
   * Runs `work` under `loan:<loanId>` in `mode`, inside a business transaction that ends with "business done".
   * @throws LockNotAcquiredError when the loan's lock is not available (HTTP 423 through `LockHttpInterceptor`).
   * @throws ConflictException when the lock was lost before the transaction could commit (it rolled back).
   */
  async run<T>(
    loanId: number,
    mode: LockMode,
    operation: string,
    work: (manager: EntityManager, stamp: number) => Promise<T>,
  ): Promise<T> {
    const lock = loanLock(loanId, mode);
    const stamp = await this.locks.tryLocks([lock]);
    if (stamp === 0) throw new LockNotAcquiredError([lock], `LoansService.${operation}`, 1);
    let lost = false;
    try {
      return await this.dataSource.transaction(async (manager) => {
        const result = await work(manager, stamp);
        await this.locks.markBusinessDone(stamp, manager);
        return result;
      });
    } catch (error) {
      if (!(error instanceof LockLostError)) throw error;
      lost = true;
      throw new ConflictException(
        `the ${operation} on loan ${loanId} lost its lock (stamp ${stamp}) and was rolled back`,
      );
    } finally {
      if (!lost) await this.release(stamp);
    }
  }

  /** Releases after the commit; a grant the reaper freed in between is reported, not thrown over the result. */
  private async release(stamp: number): Promise<void> {
    try {
      await this.locks.releaseLocks(stamp);
    } catch (error) {
      if (!(error instanceof IllegalMonitorStateError)) throw error;
      this.logger.warn(`Stamp ${stamp} was already freed when its holder released it (its lease had expired)`);
    }
  }
}
