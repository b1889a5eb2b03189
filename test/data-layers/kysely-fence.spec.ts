import { CompiledQuery, Kysely, MysqlDialect, PostgresDialect, type Transaction } from 'kysely';
import { createPool } from 'mysql2';
import pg from 'pg';
import { LockAdminService, LockFence, type LockFenceStatement, LockLostError, LockService } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';

/** The application's tables, as Kysely types them. */
interface Database {
  loans: { id: number; balance: number };
  repayments: { loan_id: number; amount: number };
}

/** The fence sent through Kysely inside `trx`, as docs/data-layers.md shows it. */
const through = (trx: Transaction<Database>) => (s: LockFenceStatement) =>
  trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params]));

for (const dialect of DIALECTS) {
  dialect.describe(`LockFence with Kysely on ${dialect.name}`, () => {
    let desk: LoanDesk;
    let db: TestDatabase;
    let locks: LockService;
    let fence: LockFence;
    let admin: LockAdminService;
    let kysely: Kysely<Database>;
    const repayments = (loan: number) => desk.repayments(loan);
    const logStatus = (stamp: number) => desk.logStatus(stamp);
    /** One repayment written under `stamp` in a Kysely transaction, fenced through `LockFence.transaction`. */
    const repay = (stamp: number, loan: number) =>
      fence.transaction(stamp, (fenced) =>
        kysely.transaction().execute(async (trx) => {
          await trx.insertInto('repayments').values({ loan_id: loan, amount: 10 }).execute();
          await fenced(through(trx));
        }),
      );

    beforeAll(async () => {
      desk = await openLoanDesk(dialect, 'kysely-1');
      ({ db, locks, fence, admin } = desk);
      kysely = new Kysely<Database>({
        dialect:
          dialect.name === 'PostgreSQL'
            ? new PostgresDialect({ pool: new pg.Pool({ connectionString: db.url, max: 4 }) })
            : new MysqlDialect({ pool: createPool({ uri: db.url, connectionLimit: 4 }) }),
      });
    });
    afterAll(async () => {
      await kysely?.destroy();
      await desk?.close();
    });

    it('commits a fenced write while the grant is held (transaction and fenceWith)', async () => {
      const stamp = await locks.tryLocks(['LOAN:1_WRITE']);
      await repay(stamp, 1);
      expect(await logStatus(stamp)).toBe('BUSINESS_DONE');
      await locks.releaseLocks(stamp);

      const again = await locks.tryLocks(['LOAN:1_WRITE']);
      await kysely.transaction().execute(async (trx) => {
        await trx.insertInto('repayments').values({ loan_id: 1, amount: 10 }).execute();
        await fence.fenceWith(again, through(trx));
      });
      expect(await logStatus(again)).toBe('BUSINESS_DONE');
      await locks.releaseLocks(again);
      expect(await repayments(1)).toBe(2);
    });

    it('rolls the write back with LockLostError when the grant was forced free before the commit', async () => {
      const stamp = await locks.tryLocks(['LOAN:2_WRITE']);
      const failure = await fence
        .transaction(stamp, (fenced) =>
          kysely.transaction().execute(async (trx) => {
            await trx.insertInto('repayments').values({ loan_id: 2, amount: 10 }).execute();
            await admin.forceRelease(stamp, 'stuck repayment');
            await fenced(through(trx));
          }),
        )
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
        kysely.transaction().execute(async (trx) => {
          await trx.insertInto('repayments').values({ loan_id: 3, amount: 10 }).execute();
          await fence.fenceWith(stamp, through(trx));
        }),
      ).rejects.toBeInstanceOf(LockLostError);
      expect(await repayments(3)).toBe(0);
      expect(signal.reason).toBeInstanceOf(LockLostError);
    });

    it('lets two concurrent repayments of one loan never both commit', async () => {
      const first = await locks.tryLocks(['LOAN:4_WRITE']);
      let stalled!: () => void;
      const resume = new Promise<void>((resolve) => (stalled = resolve));
      let read!: () => void;
      const hasRead = new Promise<void>((resolve) => (read = resolve));
      // The first repayment reads the balance, then stalls past a forced release of its grant.
      const slow = fence.transaction(first, (fenced) =>
        kysely.transaction().execute(async (trx) => {
          const { balance } = await trx.selectFrom('loans').select('balance').where('id', '=', 4).executeTakeFirstOrThrow();
          read();
          await resume;
          await trx.updateTable('loans').set({ balance: balance - 60 }).where('id', '=', 4).execute();
          await trx.insertInto('repayments').values({ loan_id: 4, amount: 60 }).execute();
          await fenced(through(trx));
        }),
      );
      await hasRead;
      await admin.forceRelease(first, 'stalled repayment');
      const second = await locks.tryLocks(['LOAN:4_WRITE']);
      expect(second).toBeGreaterThan(0);
      await fence.transaction(second, (fenced) =>
        kysely.transaction().execute(async (trx) => {
          const { balance } = await trx.selectFrom('loans').select('balance').where('id', '=', 4).executeTakeFirstOrThrow();
          await trx.updateTable('loans').set({ balance: balance - 60 }).where('id', '=', 4).execute();
          await trx.insertInto('repayments').values({ loan_id: 4, amount: 60 }).execute();
          await fenced(through(trx));
        }),
      );
      await locks.releaseLocks(second);
      stalled();
      await expect(slow).rejects.toBeInstanceOf(LockLostError);
      expect(await repayments(4)).toBe(1);
      const loan = await kysely.selectFrom('loans').select('balance').where('id', '=', 4).executeTakeFirstOrThrow();
      expect(Number(loan.balance)).toBe(40);
    });

    it('never tells the holder of a committed fenced transaction that its grant was lost (its release follows)', async () => {
      expect(await desk.toldLostAfterCommit((stamp) => repay(stamp, 9))).toBe(false);
    });
  });
}
