import { setTimeout as sleep } from 'node:timers/promises';
import {
  InvalidLockArgumentError,
  LockAdminService,
  LockFence,
  type LockFenceConnection,
  LockLostError,
  LockService,
} from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { type BusinessPool, businessPool } from './business-pool.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';

for (const dialect of DIALECTS) {
  dialect.describe(`LockFence on a plain driver (${dialect.name === 'PostgreSQL' ? 'pg' : 'mysql2'}), ${dialect.name}`, () => {
    let desk: LoanDesk;
    let db: TestDatabase;
    let locks: LockService;
    let fence: LockFence;
    let admin: LockAdminService;
    let business: BusinessPool;
    const repayments = (loan: number) => desk.repayments(loan);
    const logStatus = (stamp: number) => desk.logStatus(stamp);

    beforeAll(async () => {
      desk = await openLoanDesk(dialect, 'fence-1');
      ({ db, locks, fence, admin } = desk);
      business = businessPool(dialect, db.url);
    });
    afterAll(async () => {
      await business?.close();
      await desk?.close();
    });

    it('commits a fenced write while the grant is held, the grant marked business done', async () => {
      const stamp = await locks.tryLocks(['LOAN:1_WRITE']);
      const tx = await business.begin();
      try {
        await tx.run('INSERT INTO repayments (loan_id, amount) VALUES (1, 10)');
        await fence.fence(tx.connection, stamp);
        await tx.run('COMMIT');
      } finally {
        await tx.end();
      }
      expect(await logStatus(stamp)).toBe('BUSINESS_DONE');
      await locks.releaseLocks(stamp);

      const again = await locks.tryLocks(['LOAN:1_WRITE']);
      const tx2 = await business.begin();
      try {
        await tx2.run('INSERT INTO repayments (loan_id, amount) VALUES (1, 20)');
        await fence.fenceAndCommit(tx2.connection, again);
      } finally {
        await tx2.end();
      }
      expect(await logStatus(again)).toBe('BUSINESS_DONE');
      expect(locks.getSignal(again).aborted).toBe(false);
      await locks.releaseLocks(again);
      expect(await repayments(1)).toBe(2);
    });

    it('rolls the write back with LockLostError when an admin forced the grant free before the commit', async () => {
      const stamp = await locks.tryLocks(['LOAN:2_WRITE']);
      const tx = await business.begin();
      try {
        await tx.run('INSERT INTO repayments (loan_id, amount) VALUES (2, 10)');
        await admin.forceRelease(stamp, 'stuck repayment');
        const failure = await fence.fenceAndCommit(tx.connection, stamp).catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(LockLostError);
        expect((failure as LockLostError).stamp).toBe(stamp);
      } finally {
        await tx.end();
      }
      expect(await repayments(2)).toBe(0);
      // The holder is told: its signal fired, and the grant is no longer held here.
      expect(locks.isHeld(stamp)).toBe(false);
    });

    it('rolls the write back with LockLostError when the grant was reaped before the commit', async () => {
      const stamp = await locks.tryLocks(['LOAN:3_WRITE']);
      const signal = locks.getSignal(stamp);
      const tx = await business.begin();
      try {
        await tx.run('INSERT INTO repayments (loan_id, amount) VALUES (3, 10)');
        // The holder froze past its lease (as far as the database can tell), and a reaper freed the grant.
        await db.query(`UPDATE locking_log SET lease_expires = ${desk.pastLease} WHERE stamp = $1`, [stamp]);
        expect(await locks.reapStaleLocks()).toBeGreaterThanOrEqual(1);
        await expect(fence.fence(tx.connection, stamp)).rejects.toBeInstanceOf(LockLostError);
        await tx.run('ROLLBACK');
      } finally {
        await tx.end();
      }
      expect(await repayments(3)).toBe(0);
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBeInstanceOf(LockLostError);
    });

    it('lets two concurrent repayments of one loan never both commit', async () => {
      /** A repayment read under the lock, then written from what it read, committed through the fence. */
      const begin = async (stamp: number) => {
        const tx = await business.begin();
        const [loan] = await tx.rows<{ balance: number }>('SELECT balance FROM loans WHERE id = 4');
        return {
          tx,
          finish: async () => {
            await tx.run('UPDATE loans SET balance = $1 WHERE id = 4', [Number(loan!.balance) - 60]);
            await tx.run('INSERT INTO repayments (loan_id, amount) VALUES (4, 60)');
            await fence.fenceAndCommit(tx.connection, stamp);
          },
        };
      };
      const first = await locks.tryLocks(['LOAN:4_WRITE']);
      const slow = await begin(first);
      // The first repayment stalls (a GC pause, a slow call) until an admin frees its grant; the second one runs.
      await admin.forceRelease(first, 'stalled repayment');
      const second = await locks.tryLocks(['LOAN:4_WRITE']);
      expect(second).toBeGreaterThan(0);
      const fast = await begin(second);
      try {
        await fast.finish();
      } finally {
        await fast.tx.end();
      }
      await locks.releaseLocks(second);
      try {
        await expect(slow.finish()).rejects.toBeInstanceOf(LockLostError);
      } finally {
        await slow.tx.end();
      }
      expect(await repayments(4)).toBe(1);
      const [loan] = await db.query<{ balance: number }>('SELECT balance FROM loans WHERE id = 4');
      expect(Number(loan!.balance)).toBe(40);
    });

    it('holds off a forced release and every other holder from the fence to the commit', async () => {
      const stamp = await locks.tryLocks(['LOAN:5_WRITE']);
      const tx = await business.begin();
      let forced: Promise<unknown> | undefined;
      try {
        await tx.run('INSERT INTO repayments (loan_id, amount) VALUES (5, 10)');
        await fence.fence(tx.connection, stamp);
        forced = admin.forceRelease(stamp, 'impatient admin').then(
          () => 'forced',
          (error: unknown) => error,
        );
        // Whatever the machine's load, the forced release cannot end before the business transaction does.
        expect(await Promise.race([forced, sleep(500).then(() => 'waiting')])).toBe('waiting');
        expect(await locks.tryLocks(['LOAN:5_READ'])).toBe(0);
        await tx.run('COMMIT');
      } finally {
        await tx.end();
      }
      expect(await forced).toBe('forced');
      expect(await repayments(5)).toBe(1);
      const next = await locks.tryLocks(['LOAN:5_WRITE']);
      expect(next).toBeGreaterThan(0);
      await locks.releaseLocks(next);
    });

    describe.each(['REPEATABLE READ', 'SERIALIZABLE'])('at %s', (isolation) => {
      it('commits a fenced write while held, and rolls it back with LockLostError once the grant was forced free', async () => {
        const loan = isolation === 'SERIALIZABLE' ? 8 : 7;
        const stamp = await locks.tryLocks([`LOAN:${loan}_WRITE`]);
        const tx = await business.begin(isolation);
        try {
          // The snapshot is taken by the first statement, before the grant's end below.
          await tx.run('INSERT INTO repayments (loan_id, amount) VALUES ($1, 10)', [loan]);
          await fence.fenceAndCommit(tx.connection, stamp);
        } finally {
          await tx.end();
        }
        await locks.releaseLocks(stamp);
        expect(await repayments(loan)).toBe(1);

        const lost = await locks.tryLocks([`LOAN:${loan}_WRITE`]);
        const tx2 = await business.begin(isolation);
        try {
          await tx2.run('INSERT INTO repayments (loan_id, amount) VALUES ($1, 10)', [loan]);
          await admin.forceRelease(lost, 'stuck repayment');
          await expect(fence.fenceAndCommit(tx2.connection, lost)).rejects.toBeInstanceOf(LockLostError);
        } finally {
          await tx2.end();
        }
        expect(await repayments(loan)).toBe(1);
      });
    });

    it('never tells the holder of a committed fenced transaction that its grant was lost (its release follows)', async () => {
      const told = await desk.toldLostAfterCommit(async (stamp) => {
        const tx = await business.begin();
        try {
          await tx.run('INSERT INTO repayments (loan_id, amount) VALUES (9, 10)');
          await fence.fenceAndCommit(tx.connection, stamp);
        } finally {
          await tx.end();
        }
      });
      expect(told).toBe(false);
    });

    it('refuses a pool, whose statements may each run outside the transaction', async () => {
      const stamp = await locks.tryLocks(['LOAN:6_WRITE']);
      try {
        await expect(fence.fence(business.pool as LockFenceConnection, stamp)).rejects.toBeInstanceOf(InvalidLockArgumentError);
      } finally {
        await locks.releaseLocks(stamp);
      }
    });
  });
}
