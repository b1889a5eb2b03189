import type { PrismaClient } from '@prisma/client';
import { LockAdminService, LockFence, LockLostError, LockService } from 'nestjs-db-locks';
import { expireLeases } from '../support/dialect-sql.js';
import { DIALECTS } from '../support/dialects.js';
import { Gate } from '../support/gate.js';
import type { TestDatabase } from '../support/test-database.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';
import { openPrisma, repay } from './prisma-repayments.js';

for (const dialect of DIALECTS) {
  dialect.describe(`LockFence with Prisma 7 (driver adapter) on ${dialect.name}`, () => {
    let desk: LoanDesk;
    let db: TestDatabase;
    let locks: LockService;
    let fence: LockFence;
    let admin: LockAdminService;
    let prisma: PrismaClient;
    const repayments = (loan: number) => desk.repayments(loan);
    const balance = async (loan: number) =>
      Number((await db.query<{ balance: number }>('SELECT balance FROM loans WHERE id = $1', [loan]))[0]!.balance);

    beforeAll(async () => {
      desk = await openLoanDesk(dialect, 'prisma-1');
      ({ db, locks, fence, admin } = desk);
      // Prisma wants a primary key on every model.
      await db.query(
        dialect.name === 'PostgreSQL'
          ? 'ALTER TABLE repayments ADD COLUMN id serial PRIMARY KEY'
          : 'ALTER TABLE repayments ADD COLUMN id int AUTO_INCREMENT PRIMARY KEY',
      );
      prisma = openPrisma(dialect, db.url);
    });
    afterAll(async () => {
      await prisma?.$disconnect();
      await desk?.close();
    });

    it('commits a fenced write while the grant is held (transaction and fenceWith)', async () => {
      const stamp = await locks.tryLocks(['LOAN:1_WRITE']);
      await repay(prisma, fence, stamp, 1, 10);
      expect(await desk.logStatus(stamp)).toBe('BUSINESS_DONE');
      await locks.releaseLocks(stamp);

      const again = await locks.tryLocks(['LOAN:1_WRITE']);
      await prisma.$transaction(async (tx) => {
        await tx.repayment.create({ data: { loanId: 1, amount: 10 } });
        await fence.fenceWith(again, (s) => tx.$executeRawUnsafe(s.sql, ...s.params));
      });
      expect(await desk.logStatus(again)).toBe('BUSINESS_DONE');
      await locks.releaseLocks(again);
      expect(await repayments(1)).toBe(2);
      expect(await balance(1)).toBe(90);
    });

    it('rolls the write back with LockLostError when the grant was forced free before the commit', async () => {
      const stamp = await locks.tryLocks(['LOAN:2_WRITE']);
      const failure = await repay(prisma, fence, stamp, 2, 10, {
        beforeFence: () => admin.forceRelease(stamp, 'stuck repayment').then(() => undefined),
      }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(LockLostError);
      expect(await repayments(2)).toBe(0);
      expect(await balance(2)).toBe(100);
      expect(locks.isHeld(stamp)).toBe(false);
    });

    it('rolls the write back with LockLostError when the grant was reaped before the commit', async () => {
      const stamp = await locks.tryLocks(['LOAN:3_WRITE']);
      const signal = locks.getSignal(stamp);
      await expireLeases(db, dialect, stamp);
      expect(await locks.reapStaleLocks()).toBeGreaterThanOrEqual(1);
      await expect(repay(prisma, fence, stamp, 3, 10)).rejects.toBeInstanceOf(LockLostError);
      expect(await repayments(3)).toBe(0);
      expect(await balance(3)).toBe(100);
      expect(signal.reason).toBeInstanceOf(LockLostError);
    });

    it('lets two concurrent repayments of one loan never both commit', async () => {
      const first = await locks.tryLocks(['LOAN:4_WRITE']);
      const stall = new Gate();
      // The first repayment reads the balance, then stalls past a forced release of its grant.
      const slow = repay(prisma, fence, first, 4, 60, { afterRead: () => stall.pass() });
      await stall.reached();
      await admin.forceRelease(first, 'stalled repayment');
      const second = await locks.tryLocks(['LOAN:4_WRITE']);
      expect(second).toBeGreaterThan(0);
      await repay(prisma, fence, second, 4, 60);
      await locks.releaseLocks(second);
      stall.open();
      await expect(slow).rejects.toBeInstanceOf(LockLostError);
      expect(await repayments(4)).toBe(1);
      expect(await balance(4)).toBe(40);
    });

    it('never tells the holder of a committed fenced transaction that its grant was lost (its release follows)', async () => {
      expect(await desk.toldLostAfterCommit((stamp) => repay(prisma, fence, stamp, 9, 10))).toBe(false);
    });
  });
}
