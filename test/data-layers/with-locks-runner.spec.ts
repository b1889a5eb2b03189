import { Controller, Injectable, Param, Post } from '@nestjs/common';
import {
  LockLostError,
  LockStoreError,
  NoFencedTransactionError,
  type LockFenceStatement,
  LockService,
  type LockTransactionRunner,
  type LockTransactionIsolation,
  type LockTransactionRunOptions,
  WithLocks,
} from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { until } from '../support/until.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';
import { PRINTED_RUNNERS } from './printed-runners.js';
import type { LayerPool, LayerTransaction } from './query-builders.js';

/**
 * The application's runner: the runner docs/<layer>.md prints (printed-runners.ts), its transaction object seen through
 * the spec's `LayerTransaction` (the provider's value is set per layer).
 */
abstract class LoanTransactions implements LockTransactionRunner<LayerTransaction> {
  abstract run<T>(work: (trx: LayerTransaction) => Promise<T>, options: LockTransactionRunOptions): Promise<T>;
  abstract execute(trx: LayerTransaction, statement: LockFenceStatement): Promise<unknown>;
}

/** Where a repayment stops: the test ends grants meanwhile. */
const pauses = {
  afterRead: async (_loan: number) => undefined as void,
  beforeCommit: async (_loan: number) => undefined as void,
};
/** The runner's `run` as a spec sets it (undefined: the layer's transaction as it is). */
const runs: { run?: <T>(work: (trx: LayerTransaction) => Promise<T>, options: LockTransactionRunOptions) => Promise<T> } = {};

/** A method's own error. */
class DeclinedError extends Error {}

/** The grants of the last repayment of each loan: its own and its nested audit's. */
const grants = new Map<number, { own: number; audit?: number; auditHeldAtReturn?: boolean }>();

@Injectable()
class AuditTrail {
  constructor(private readonly locks: LockService) {}

  /** A nested locked call: joins the repayment's transaction, so its grant is fenced with it. */
  @WithLocks({ locks: (loan: number) => [`AUDIT:${loan}_WRITE`] })
  async record(loan: number, trx: LayerTransaction): Promise<void> {
    expect(this.locks.currentTransaction(LoanTransactions)).toBe(trx);
    grants.get(loan)!.audit = this.locks.currentLock()!.stamp;
  }
}

@Controller('loans')
class RepaymentsController {
  constructor(
    private readonly locks: LockService,
    private readonly audit: AuditTrail,
  ) {}

  @Post(':id/repay')
  @WithLocks({ locks: (id: string) => [`LOAN:${id}_WRITE`], transaction: { runner: LoanTransactions } })
  async repay(@Param('id') id: string): Promise<{ repaid: boolean }> {
    const loan = Number(id);
    const trx = this.locks.currentTransaction(LoanTransactions);
    expect(() => this.locks.currentManager()).toThrow(NoFencedTransactionError); // no EntityManager in it
    grants.set(loan, { own: this.locks.currentLock()!.stamp });
    const balance = await trx.balance(loan);
    await pauses.afterRead(loan);
    await trx.setBalance(loan, balance - 60);
    await trx.insertRepayment(loan, 60);
    await this.audit.record(loan, trx);
    await pauses.beforeCommit(loan);
    const { audit } = grants.get(loan)!;
    grants.get(loan)!.auditHeldAtReturn = this.locks.isHeld(audit!);
    return { repaid: true };
  }

  /** Writes, then declines: its own error, at REPEATABLE READ. */
  @WithLocks({ locks: (id: number) => [`LOAN:${id}_WRITE`], transaction: { runner: LoanTransactions, isolation: 'REPEATABLE READ' } })
  async decline(id: number): Promise<void> {
    await this.locks.currentTransaction(LoanTransactions).insertRepayment(id, 1);
    throw new DeclinedError('declined');
  }

  /** What `seen` finds in the method's transaction at REPEATABLE READ, after a write. */
  @WithLocks({ locks: (id: number) => [`LOAN:${id}_WRITE`], transaction: { runner: LoanTransactions, isolation: 'REPEATABLE READ' } })
  async atRepeatableRead(id: number, seen: IsolationProbe): Promise<string> {
    return this.isolationSeen(id, seen);
  }

  /** What `seen` finds in the method's transaction at SERIALIZABLE, after a write. */
  @WithLocks({ locks: (id: number) => [`LOAN:${id}_WRITE`], transaction: { runner: LoanTransactions, isolation: 'SERIALIZABLE' } })
  async atSerializable(id: number, seen: IsolationProbe): Promise<string> {
    return this.isolationSeen(id, seen);
  }

  private async isolationSeen(id: number, seen: IsolationProbe): Promise<string> {
    const trx = this.locks.currentTransaction(LoanTransactions);
    await trx.insertRepayment(id, 1);
    return seen(trx, id);
  }
}

/** The isolation level of the transaction `trx` (in a method that has not read loan `id` yet), e.g. `REPEATABLE READ`. */
type IsolationProbe = (trx: LayerTransaction, id: number) => Promise<string>;

for (const layer of PRINTED_RUNNERS) {
  for (const dialect of DIALECTS) {
    dialect.describe(`@WithLocks({ transaction: { runner } }) with ${layer.name} on ${dialect.name}`, () => {
      let desk: LoanDesk;
      let pool: LayerPool;
      let repayments: RepaymentsController;
      const runner: LoanTransactions = {
        run: (work, options) => (runs.run ? runs.run(work, options) : pool.transaction(work, options)),
        execute: (trx, statement) => trx.execute(statement),
      };
      const balance = async (loan: number) =>
        Number((await desk.db.query<{ balance: number }>('SELECT balance FROM loans WHERE id = $1', [loan]))[0]!.balance);
      const post = (loan: number) => fetch(`${desk.baseUrl!}/loans/${loan}/repay`, { method: 'POST' });

      beforeAll(async () => {
        desk = await openLoanDesk(dialect, `runner-${layer.name.toLowerCase()}`, {
          controllers: [RepaymentsController],
          providers: [AuditTrail, { provide: LoanTransactions, useValue: runner }],
        });
        // Prisma wants a primary key on every model.
        await desk.db.query(
          dialect.name === 'PostgreSQL'
            ? 'ALTER TABLE repayments ADD COLUMN id serial PRIMARY KEY'
            : 'ALTER TABLE repayments ADD COLUMN id int AUTO_INCREMENT PRIMARY KEY',
        );
        pool = layer.open(dialect, desk.db.url);
        repayments = desk.app.get(RepaymentsController);
      });
      afterEach(() => {
        runs.run = undefined;
        pauses.afterRead = async () => undefined;
        pauses.beforeCommit = async () => undefined;
      });
      afterAll(async () => {
        await pool?.close();
        await desk?.close();
      });

      it('commits the method in the layer\'s transaction while held; a nested call joins it and keeps its grant until the commit', async () => {
        expect((await post(1)).status).toBe(201);
        expect(await desk.repayments(1)).toBe(1);
        expect(await balance(1)).toBe(40);
        const { own, audit, auditHeldAtReturn } = grants.get(1)!;
        expect(auditHeldAtReturn).toBe(true);
        expect(desk.locks.isHeld(own)).toBe(false);
        expect(desk.locks.isHeld(audit!)).toBe(false);
      });

      it('rolls the write back with LockLostError when the grant was forced free before the commit', async () => {
        pauses.beforeCommit = async (loan) => void (await desk.admin.forceRelease(grants.get(loan)!.own, 'stuck repayment'));
        await expect(repayments.repay('2')).rejects.toBeInstanceOf(LockLostError);
        expect(await desk.repayments(2)).toBe(0);
        expect(await balance(2)).toBe(100);
      });

      it('rolls the write back with LockLostError when the grant was reaped before the commit', async () => {
        pauses.beforeCommit = async (loan) => {
          await desk.db.query(`UPDATE locking_log SET lease_expires = ${desk.pastLease} WHERE stamp = $1`, [grants.get(loan)!.own]);
          expect(await desk.locks.reapStaleLocks()).toBeGreaterThanOrEqual(1);
        };
        await expect(repayments.repay('3')).rejects.toBeInstanceOf(LockLostError);
        expect(await desk.repayments(3)).toBe(0);
      });

      it('rolls everything back when the grant of a nested call was forced free before the commit', async () => {
        pauses.beforeCommit = async (loan) => void (await desk.admin.forceRelease(grants.get(loan)!.audit!, 'stuck audit'));
        await expect(repayments.repay('5')).rejects.toBeInstanceOf(LockLostError);
        expect(await desk.repayments(5)).toBe(0);
      });

      it('lets two concurrent repayments of one loan never both commit', async () => {
        let resume!: () => void;
        const resumed = new Promise<void>((resolve) => (resume = resolve));
        let read!: () => void;
        const hasRead = new Promise<void>((resolve) => (read = resolve));
        pauses.afterRead = () => {
          pauses.afterRead = async () => undefined; // the second goes straight on
          read();
          return resumed;
        };
        // The first repayment reads the balance, then stalls past a forced release of its grant.
        const slow = repayments.repay('4');
        await hasRead;
        await desk.admin.forceRelease(grants.get(4)!.own, 'stalled repayment');
        try {
          expect((await post(4)).status).toBe(201);
        } finally {
          resume(); // also when the second fails: a first left stalled in its transaction would hang the pool's end
        }
        await expect(slow).rejects.toBeInstanceOf(LockLostError);
        expect(await desk.repayments(4)).toBe(1);
        expect(await balance(4)).toBe(40);
      });

      it('answers 409 over HTTP when the grant was lost before the commit', async () => {
        pauses.beforeCommit = async (loan) => void (await desk.admin.forceRelease(grants.get(loan)!.own, 'stuck repayment'));
        expect((await post(6)).status).toBe(409);
        expect(await desk.repayments(6)).toBe(0);
      });

      /** Whether `LOAN:<loan>` can be taken now (released at once). */
      const free = async (loan: number) => {
        const stamp = await desk.locks.tryLocks([`LOAN:${loan}_WRITE`]);
        if (stamp > 0) await desk.locks.releaseLocks(stamp);
        return stamp > 0;
      };

      it("hands the method's isolation level to the runner; the method's own error rolls back and passes through unchanged", async () => {
        const seen: LockTransactionRunOptions[] = [];
        runs.run = (work, options) => {
          seen.push(options);
          return pool.transaction(work, options);
        };
        await expect(repayments.decline(7)).rejects.toBeInstanceOf(DeclinedError);
        await repayments.repay('7');
        expect(seen).toEqual([{ isolation: 'REPEATABLE READ' }, {}]);
        expect(await desk.repayments(7)).toBe(1); // the repayment's, not the declined write
        expect(await free(7)).toBe(true);
      });

      /**
       * The isolation level of the method's transaction: PostgreSQL reports it; MariaDB reports only the session's
       * (`@@tx_isolation`, not what SET TRANSACTION gave the next transaction), so there it is observed: at SERIALIZABLE
       * InnoDB share-locks the rows a plain SELECT reads (another client cannot lock them), at REPEATABLE READ a second
       * read does not see a row another client committed meanwhile, at READ COMMITTED it does.
       */
      const isolationOf: IsolationProbe = async (trx, id) => {
        if (dialect.name === 'PostgreSQL') return String((await trx.rows("SELECT upper(current_setting('transaction_isolation')) AS level"))[0]!.level);
        const before = await trx.balance(id);
        const locked = await desk.db.query('SELECT id FROM loans WHERE id = $1 FOR UPDATE NOWAIT', [id]).then(
          () => false,
          (error: { errno?: number }) => (error.errno === 1205 ? true : Promise.reject(error)), // lock wait timeout
        );
        if (locked) return 'SERIALIZABLE';
        await desk.db.query('UPDATE loans SET balance = balance + 1 WHERE id = $1', [id]);
        return (await trx.balance(id)) === before ? 'REPEATABLE READ' : 'READ COMMITTED';
      };

      it.each([
        ['REPEATABLE READ', 10, (id: number) => repayments.atRepeatableRead(id, isolationOf)],
        ['SERIALIZABLE', 11, (id: number) => repayments.atSerializable(id, isolationOf)],
      ] as const)(
        "runs the method at the isolation level it names (%s), as the database reports it inside the layer's transaction",
        async (level: LockTransactionIsolation, loan, method) => {
          await desk.db.query('INSERT INTO loans (id, balance) VALUES ($1, 100)', [loan]);
          await expect(method(loan)).resolves.toBe(level);
          expect(await desk.repayments(loan)).toBe(1);
        },
      );

      it('fails with LockStoreError when the runner fails before the method ran (a BEGIN), and frees the grant', async () => {
        grants.delete(8);
        runs.run = async () => {
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        };
        const failure = await repayments.repay('8').catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(LockStoreError);
        expect((failure as LockStoreError).outcomeUnknown).toBe(false);
        expect(grants.get(8)).toBeUndefined();
        expect(await free(8)).toBe(true);
      });

      it('fails with LockStoreError, outcome unknown, when the runner rejects after the fence (a COMMIT), and frees the grant', async () => {
        runs.run = (work) =>
          pool.transaction(async (trx) => {
            await work(trx);
            throw new Error('the connection went at COMMIT');
          });
        const failure = await repayments.repay('8').catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(LockStoreError);
        expect((failure as LockStoreError).outcomeUnknown).toBe(true);
        expect(await desk.repayments(8)).toBe(0);
        expect(await free(8)).toBe(true);
      });

      it('never tells the holder of a committed transaction that its grant was lost (forced free after the COMMIT, before the release)', async () => {
        const witness = await desk.locks.tryLocks(['WITNESS_WRITE']);
        const witnessSignal = desk.locks.getSignal(witness);
        let signal: AbortSignal | undefined;
        runs.run = async (work) => {
          const value = await pool.transaction(work);
          const { own } = grants.get(9)!;
          signal = desk.locks.getSignal(own);
          await desk.admin.forceRelease(own, 'after the commit');
          await desk.admin.forceRelease(witness, 'witness');
          await until(() => witnessSignal.aborted, 20_000); // the holder has heard of both
          return value;
        };
        await expect(repayments.repay('9')).resolves.toEqual({ repaid: true });
        expect(await desk.repayments(9)).toBe(1);
        expect(signal!.aborted).toBe(false);
      });
    });
  }
}
