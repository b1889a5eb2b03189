import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import mysql from 'mysql2/promise';
import pg from 'pg';
import {
  FenceOutsideTransactionError,
  IllegalMonitorStateError,
  LockAdminService,
  LockConfigurationError,
  LockFence,
  type LockFenceConnection,
  type LockFenceStatement,
  LockLostError,
  LockService,
  type LockTransactionRunner,
  WithLocks,
} from 'nestjs-db-locks';
import { sessionsWaitingForALock } from '../support/dialect-sql.js';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import { CapturedLog } from '../support/logged-lock-app.js';
import { until } from '../support/until.js';
import { type LoanDesk, openLoanDesk } from './loan-desk.js';

/** One connection of the application's own pool, as `pool.connect()` / `pool.getConnection()` hands it out. */
interface PooledConnection extends LockFenceConnection {
  release(): void;
}

/**
 * The application's own pool of ONE connection (`pg.Pool`, a `mysql2/promise` pool), so that the next user of the pool
 * gets the very connection the previous one gave back: what a fenced transaction leaves open on it, that user commits.
 */
interface OneConnectionPool {
  connect(): Promise<PooledConnection>;
  /** A statement on the pool itself (autocommit, on whatever connection is free): the wrong handle. */
  query(sql: string, values: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

const oneConnectionPool = (dialect: TestDialect, url: string) => oneConnectionPoolOf(dialect, url, 1);

const REPAY = (loan: number) => `INSERT INTO repayments (loan_id, amount) VALUES (${loan}, 10)`;

/** The plain-driver runner of docs/data-layers.md on one pool: BEGIN, the work, COMMIT (ROLLBACK when it fails). */
function poolRunner(pool: OneConnectionPool, beforeCommit?: () => Promise<void>): LockTransactionRunner<PooledConnection> {
  return {
    async run<T>(work: (connection: PooledConnection) => Promise<T>): Promise<T> {
      const connection = await pool.connect();
      try {
        await connection.query('BEGIN', []);
        const value = await work(connection);
        await beforeCommit?.();
        await connection.query('COMMIT', []);
        return value;
      } catch (error) {
        await connection.query('ROLLBACK', []).catch(() => undefined);
        throw error;
      } finally {
        connection.release();
      }
    },
    execute: (connection, s) => connection.query(s.sql, [...s.params]),
  };
}

for (const dialect of DIALECTS) {
  dialect.describe(`The fence in the hands of a real team (${dialect.name})`, () => {
    let desk: LoanDesk;
    let locks: LockService;
    let fence: LockFence;
    let admin: LockAdminService;
    let pool: OneConnectionPool;
    const log = new CapturedLog();
    const repayments = (loan: number) => desk.repayments(loan);

    /** What the pool's next user commits: BEGIN and COMMIT on the connection the previous one gave back. */
    async function nextUserCommits(): Promise<void> {
      const next = await pool.connect();
      try {
        await next.query('BEGIN', []);
        await next.query('COMMIT', []);
      } finally {
        next.release();
      }
    }

    /** A grant its holder has been told is lost: forced free by an operator, the loss found by the lease renewal. */
    async function toldLost(name: string): Promise<number> {
      const stamp = await locks.tryLocks([`${name}_WRITE`]);
      const signal = locks.getSignal(stamp);
      await admin.forceRelease(stamp, 'operator');
      await until(() => signal.aborted, 15_000);
      return stamp;
    }

    /** The ERROR lines logged about `stamp`, and the WARN lines. */
    const linesAbout = (stamp: number, level: string) =>
      log.lines.filter((line) => line.level === level && line.message.includes(`stamp ${stamp}`)).map((line) => line.message);

    beforeAll(async () => {
      desk = await openLoanDesk(dialect, 'misuse-1', undefined, log);
      ({ locks, fence, admin } = desk);
      pool = oneConnectionPool(dialect, desk.db.url);
    });
    afterAll(async () => {
      await pool?.close();
      await desk?.close();
    });

    describe('a write under a grant known lost never commits, not even by the pool connection\'s next user', () => {
      it('fenceAndCommit, the grant forced free and its holder told: LockLostError, rolled back on that connection', async () => {
        const stamp = await toldLost('LOAN:1');
        let outcome: unknown;
        const client = await pool.connect();
        try {
          await client.query('BEGIN', []);
          await client.query(REPAY(1), []);
          outcome = await fence.fenceAndCommit(client, stamp).catch((error: unknown) => error);
        } finally {
          client.release();
          await locks.releaseLocks(stamp); // the docs' finally: no error over the outcome
        }
        expect(outcome).toBeInstanceOf(LockLostError);
        await nextUserCommits();
        expect(await repayments(1)).toBe(0);
      });

      it('fence(), the caller forgetting the ROLLBACK: the connection goes back to its pool with nothing open', async () => {
        const stamp = await toldLost('LOAN:2');
        const client = await pool.connect();
        let outcome: unknown;
        try {
          await client.query('BEGIN', []);
          await client.query(REPAY(2), []);
          outcome = await fence.fence(client, stamp).catch((error: unknown) => error);
        } finally {
          client.release();
        }
        expect(outcome).toBeInstanceOf(LockLostError);
        await nextUserCommits();
        expect(await repayments(2)).toBe(0);
        await locks.releaseLocks(stamp);
      });

      it('fenceAndCommit after the process was frozen past its lease: LockLostError, rolled back on that connection', async () => {
        const stamp = await locks.tryLocks(['LOAN:3_WRITE']);
        const client = await pool.connect();
        let outcome: unknown;
        try {
          await client.query('BEGIN', []);
          await client.query(REPAY(3), []);
          const frozenUntil = Date.now() + 3500; // the lease is 3 s: no timer, no renewal runs meanwhile
          while (Date.now() < frozenUntil) {
            // frozen
          }
          outcome = await fence.fenceAndCommit(client, stamp).catch((error: unknown) => error);
        } finally {
          client.release();
          await locks.releaseLocks(stamp).catch(() => undefined); // its rows may still be there: freed then
        }
        expect(outcome).toBeInstanceOf(LockLostError);
        await nextUserCommits();
        expect(await repayments(3)).toBe(0);
      });
    });

    describe('a fence outside the business transaction is refused, and fences nothing', () => {
      it('a forgotten BEGIN, and a fence after COMMIT: FenceOutsideTransactionError, the grant still held and not fenced', async () => {
        const stamp = await locks.tryLocks(['LOAN:4_WRITE']);
        const client = await pool.connect();
        try {
          await expect(fence.fence(client, stamp)).rejects.toBeInstanceOf(FenceOutsideTransactionError);
          await client.query('BEGIN', []);
          await client.query('COMMIT', []);
          await expect(fence.fenceAndCommit(client, stamp)).rejects.toBeInstanceOf(FenceOutsideTransactionError);
        } finally {
          client.release();
        }
        expect(await desk.logStatus(stamp)).toBe('ACQUIRED');
        expect(locks.isHeld(stamp)).toBe(true);
        await locks.releaseLocks(stamp);
      });

      it('LockFence.transaction with a runner whose execute sends on the pool (db for trx): refused, nothing written', async () => {
        const stamp = await locks.tryLocks(['LOAN:5_WRITE']);
        // Two connections, so that the wrong handle reaches another one than the transaction's.
        const wide = oneConnectionPoolOf(dialect, desk.db.url, 2);
        const wrong: LockTransactionRunner<PooledConnection> = {
          ...poolRunner(wide),
          execute: (_trx, s: LockFenceStatement) => wide.query(s.sql, [...s.params]),
        };
        try {
          const outcome = await fence.transaction(stamp, wrong, (trx) => trx.query(REPAY(5), [])).catch((error: unknown) => error);
          expect(outcome).toBeInstanceOf(FenceOutsideTransactionError);
        } finally {
          await wide.close();
        }
        expect(await repayments(5)).toBe(0);
        expect(await desk.logStatus(stamp)).toBe('ACQUIRED');
        expect(locks.isHeld(stamp)).toBe(true);
        await locks.releaseLocks(stamp);
      });

      it('@WithLocks({ transaction: { runner } }) whose runner sends the fence on the pool: refused, nothing written', async () => {
        const wide = oneConnectionPoolOf(dialect, desk.db.url, 2);
        const wrong: LockTransactionRunner<PooledConnection> = {
          ...poolRunner(wide),
          execute: (_trx, s: LockFenceStatement) => wide.query(s.sql, [...s.params]),
        };
        @Injectable()
        class Repayments {
          @WithLocks({ locks: ['LOAN:5_WRITE'], transaction: { runner: wrong } })
          async repay(): Promise<void> {
            await locks.currentTransaction(wrong).query(REPAY(5), []);
          }
        }
        try {
          await expect(new Repayments().repay()).rejects.toBeInstanceOf(FenceOutsideTransactionError);
        } finally {
          await wide.close();
        }
        expect(await repayments(5)).toBe(0);
        expect(await locks.getGrants()).toEqual([]); // released after the refusal
      });

      it('a runner that never runs the work: LockConfigurationError, nothing written, the work never called', async () => {
        const stamp = await locks.tryLocks(['LOAN:6_WRITE']);
        let called = false;
        const lazy: LockTransactionRunner<PooledConnection> = {
          run: async <T>() => undefined as T,
          execute: (connection, s) => connection.query(s.sql, [...s.params]),
        };
        const outcome = await fence
          .transaction(stamp, lazy, async () => {
            called = true;
          })
          .catch((error: unknown) => error);
        expect(outcome).toBeInstanceOf(LockConfigurationError);
        expect(called).toBe(false);
        expect(await desk.logStatus(stamp)).toBe('ACQUIRED');
        await locks.releaseLocks(stamp);
      });
    });

    describe('one truthful outcome: a repayment that committed before an operator forced its grant free', () => {
      /** Forces `stamp` free while the COMMIT is about to go: the forced release waits for the commit, then ends it. */
      const forcedAtCommit = (stamp: () => number, forced: Array<Promise<unknown>>) => async () => {
        forced.push(admin.forceRelease(stamp(), 'operator at the commit'));
        // The forced release waits behind the fence's row lock: the commit goes first.
        await until(async () => (await sessionsWaitingForALock(desk.db, dialect)) > 0, 10_000);
      };
      /**
       * The holder's own release after the commit may reach the log row before the forced release does (PostgreSQL
       * follows the row to its newest version), and then the operator is told the grant was gone: a true outcome too,
       * but not the one these tests are about. The holder's releases wait for the forced release here.
       */
      let releases: { mockRestore(): void } | undefined;
      const releasesAfter = (forced: Array<Promise<unknown>>) => {
        const release = locks.releaseLocks.bind(locks);
        releases = jest.spyOn(locks, 'releaseLocks').mockImplementation(async (stamp: number) => {
          await Promise.allSettled(forced);
          return release(stamp);
        });
      };
      afterEach(() => releases?.mockRestore());

      it('by hand (fenceAndCommit, then the finally releases): committed, no error, one WARN line', async () => {
        const stamp = await locks.tryLocks(['LOAN:7_WRITE']);
        const forced: Array<Promise<unknown>> = [];
        releasesAfter(forced);
        const atCommit = forcedAtCommit(() => stamp, forced);
        const client = await pool.connect();
        const committing: LockFenceConnection = {
          query: async (sql, values) => {
            if (sql === 'COMMIT') await atCommit();
            return client.query(sql, values);
          },
        };
        try {
          await client.query('BEGIN', []);
          await client.query(REPAY(7), []);
          await fence.fenceAndCommit(committing, stamp);
        } finally {
          client.release();
          await Promise.all(forced);
          await locks.releaseLocks(stamp); // resolves: the commit was the outcome
        }
        expect(await repayments(7)).toBe(1);
        expect(linesAbout(stamp, 'error')).toEqual([]);
        expect(linesAbout(stamp, 'warn')).toHaveLength(1);
        await expect(locks.releaseLocks(stamp)).rejects.toBeInstanceOf(IllegalMonitorStateError); // released once
      });

      it('an `await using` grant: the end of the block releases quietly after the commit', async () => {
        const forced: Array<Promise<unknown>> = [];
        releasesAfter(forced);
        let stamp = 0;
        const run = async () => {
          await using grant = (await locks.acquireLocks(['LOAN:6_WRITE']))!;
          stamp = grant.stamp;
          // `return await`: the block releases the grant when it is left, which a bare `return` does at once.
          return await fence.transaction(grant.stamp, poolRunner(pool, forcedAtCommit(() => stamp, forced)), async (trx) => {
            await trx.query(REPAY(6), []);
            return 'repaid';
          });
        };
        await expect(run()).resolves.toBe('repaid');
        await Promise.all(forced);
        expect(await repayments(6)).toBe(1);
        expect(linesAbout(stamp, 'error')).toEqual([]);
      });

      it('LockFence.transaction with the runner: committed, the release after it quiet', async () => {
        const stamp = await locks.tryLocks(['LOAN:8_WRITE']);
        const forced: Array<Promise<unknown>> = [];
        releasesAfter(forced);
        const value = await fence.transaction(stamp, poolRunner(pool, forcedAtCommit(() => stamp, forced)), async (trx) => {
          await trx.query(REPAY(8), []);
          return 'repaid';
        });
        await Promise.all(forced);
        await locks.releaseLocks(stamp);
        expect(value).toBe('repaid');
        expect(await repayments(8)).toBe(1);
        expect(linesAbout(stamp, 'error')).toEqual([]);
        expect(linesAbout(stamp, 'warn')).toHaveLength(1);
      });

      it('@WithLocks({ transaction: { runner } }): the call resolves, no ERROR line', async () => {
        const forced: Array<Promise<unknown>> = [];
        releasesAfter(forced);
        let stamp = 0;
        const runner = poolRunner(pool, forcedAtCommit(() => stamp, forced));
        @Injectable()
        class Repayments {
          @WithLocks({ locks: ['LOAN:9_WRITE'], transaction: { runner } })
          async repay(): Promise<string> {
            stamp = locks.currentLock()!.stamp;
            await locks.currentTransaction(runner).query(REPAY(9), []);
            return 'repaid';
          }
        }
        const value = await new Repayments().repay(); // a plain class: the application's LockService
        await Promise.all(forced);
        expect(value).toBe('repaid');
        expect(await repayments(9)).toBe(1);
        expect(linesAbout(stamp, 'error')).toEqual([]);
        expect(log.matching(/releasing its locks failed/)).toEqual([]);
      });

      it('a lost grant: the caller gets LockLostError through the finally that releases, and a second release still throws', async () => {
        const stamp = await locks.tryLocks(['LOAN:1_WRITE']);
        const client = await pool.connect();
        let outcome: unknown;
        try {
          await client.query('BEGIN', []);
          await client.query(REPAY(1), []);
          await admin.forceRelease(stamp, 'operator before the fence');
          await fence.fenceAndCommit(client, stamp);
        } catch (error) {
          outcome = error;
        } finally {
          client.release();
          await locks.releaseLocks(stamp);
        }
        expect(outcome).toBeInstanceOf(LockLostError);
        await expect(locks.releaseLocks(stamp)).rejects.toBeInstanceOf(IllegalMonitorStateError);
        expect(await repayments(1)).toBe(0);
      });
    });
  });
}

/** `oneConnectionPool` with `size` connections. */
function oneConnectionPoolOf(dialect: TestDialect, url: string, size: number): OneConnectionPool {
  if (dialect.name === 'PostgreSQL') {
    const pool = new pg.Pool({ connectionString: url, max: size });
    return { connect: () => pool.connect(), query: (sql, values) => pool.query(sql, values), close: () => pool.end() };
  }
  const pool = mysql.createPool({ uri: url, connectionLimit: size });
  return { connect: () => pool.getConnection(), query: (sql, values) => pool.query(sql, values), close: () => pool.end() };
}
