import { LockAdminService, LockFence, LockLostError, LockService, type LockTransactionRunner } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';
import { DATA_LAYERS, type LayerPool, type LayerTransaction } from './query-builders.js';

for (const layer of DATA_LAYERS) {
  for (const dialect of DIALECTS) {
    dialect.describe(`LockFence with ${layer.name} on ${dialect.name}`, () => {
      let desk: LoanDesk;
      let db: TestDatabase;
      let locks: LockService;
      let fence: LockFence;
      let admin: LockAdminService;
      let pool: LayerPool;
      const repayments = (loan: number) => desk.repayments(loan);
      /** The layer's transactions as a `LockTransactionRunner`: its transaction, the fence sent through its `execute`. */
      const runner: LockTransactionRunner<LayerTransaction> = {
        run: (work, options) => pool.transaction(work, options),
        execute: (trx, statement) => trx.execute(statement),
      };
      /** One repayment written under `stamp` in a transaction of the layer, fenced through `LockFence.transaction`. */
      const repay = (stamp: number, loan: number) =>
        fence.transaction(stamp, runner, async (trx) => {
          await trx.insertRepayment(loan, 10);
        });

      beforeAll(async () => {
        desk = await openLoanDesk(dialect, `${layer.name.toLowerCase()}-1`);
        ({ db, locks, fence, admin } = desk);
        pool = layer.open(dialect, db.url);
      });
      afterAll(async () => {
        await pool?.close();
        await desk?.close();
      });

      it('commits a fenced write while the grant is held (transaction and fenceWith)', async () => {
        const stamp = await locks.tryLocks(['LOAN:1_WRITE']);
        await repay(stamp, 1);
        expect(await desk.logStatus(stamp)).toBe('BUSINESS_DONE');
        await locks.releaseLocks(stamp);

        const again = await locks.tryLocks(['LOAN:1_WRITE']);
        await pool.transaction(async (trx) => {
          await trx.insertRepayment(1, 10);
          await fence.fenceWith(again, trx.execute);
        });
        expect(await desk.logStatus(again)).toBe('BUSINESS_DONE');
        await locks.releaseLocks(again);
        expect(await repayments(1)).toBe(2);
      });

      it('rolls the write back with LockLostError when the grant was forced free before the commit', async () => {
        const stamp = await locks.tryLocks(['LOAN:2_WRITE']);
        const failure = await fence
          .transaction(stamp, runner, async (trx) => {
            await trx.insertRepayment(2, 10);
            await admin.forceRelease(stamp, 'stuck repayment');
          })
          .catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(LockLostError);
        expect(await repayments(2)).toBe(0);
        expect(locks.isHeld(stamp)).toBe(false);
      });

      it('rolls the write back with LockLostError when the grant was reaped before the commit', async () => {
        const stamp = await locks.tryLocks(['LOAN:3_WRITE']);
        const signal = locks.getSignal(stamp);
        await db.query(`UPDATE locking_log SET lease_expires = ${desk.pastLease} WHERE stamp = $1`, [stamp]);
        expect(await locks.reapStaleLocks()).toBeGreaterThanOrEqual(1);
        await expect(
          pool.transaction(async (trx) => {
            await trx.insertRepayment(3, 10);
            await fence.fenceWith(stamp, trx.execute);
          }),
        ).rejects.toBeInstanceOf(LockLostError);
        expect(await repayments(3)).toBe(0);
        expect(signal.reason).toBeInstanceOf(LockLostError);
      });

      it('lets two concurrent repayments of one loan never both commit', async () => {
        /** A repayment of 60 computed from the balance it read, fenced under `stamp`; `pause` runs after the read. */
        const repay60 = (stamp: number, pause: () => Promise<void>) =>
          fence.transaction(stamp, runner, async (trx) => {
            const balance = await trx.balance(4);
            await pause();
            await trx.setBalance(4, balance - 60);
            await trx.insertRepayment(4, 60);
          });
        const first = await locks.tryLocks(['LOAN:4_WRITE']);
        let resume!: () => void;
        const resumed = new Promise<void>((resolve) => (resume = resolve));
        let read!: () => void;
        const hasRead = new Promise<void>((resolve) => (read = resolve));
        // The first repayment reads the balance, then stalls past a forced release of its grant.
        const slow = repay60(first, () => {
          read();
          return resumed;
        });
        await hasRead;
        await admin.forceRelease(first, 'stalled repayment');
        const second = await locks.tryLocks(['LOAN:4_WRITE']);
        expect(second).toBeGreaterThan(0);
        try {
          await repay60(second, () => Promise.resolve());
          await locks.releaseLocks(second);
        } finally {
          resume(); // also when the second fails: a first left stalled in its transaction would hang the pool's end
        }
        await expect(slow).rejects.toBeInstanceOf(LockLostError);
        expect(await repayments(4)).toBe(1);
        const [loan] = await db.query<{ balance: number }>('SELECT balance FROM loans WHERE id = 4');
        expect(Number(loan!.balance)).toBe(40);
      });

      it('never tells the holder of a committed fenced transaction that its grant was lost (its release follows)', async () => {
        expect(await desk.toldLostAfterCommit((stamp) => repay(stamp, 9))).toBe(false);
      });
    });
  }
}
