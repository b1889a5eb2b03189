import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import {
  FenceOutsideTransactionError,
  InvalidLockArgumentError,
  LockConfigurationError,
  type LockError,
  LockLostError,
  LockStoreError,
} from '../errors/index.js';
import type { LockTransactionRunner, LockTransactionRunOptions } from '../interfaces/lock-transaction-runner.interface.js';
import { LOCK_DATA_SOURCE, RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockLeases } from '../services/lock-leases.service.js';
import { type LockDialect, lockDialectOf } from '../store/lock-dialect.util.js';
import { inLockTables } from '../store/lock-tables.util.js';
import { toMysqlLockError } from '../store/mysql/mysql-error.util.js';
import { FENCE as MYSQL_FENCE } from '../store/mysql/mysql-fence.queries.sql.js';
import {
  FENCE as POSTGRES_FENCE,
  FENCE_IN_MARKED_TRANSACTION,
  MARK_FENCED_TRANSACTION,
} from '../store/postgres/postgres-fence.queries.sql.js';
import { isRowChangedSinceSnapshot, toLockError } from '../store/postgres/pg-error.util.js';
import { assertStamp } from '../utils/lock-validation.util.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { commitFailureOf, commitFailureReason, runnerOutcomeOf } from './fenced-outcome.util.js';
import { assertOpenTransaction, assertTransactionConnection, queryOf, rollBack } from './lock-fence-connection.util.js';
import { isFenced } from './lock-fence-result.util.js';
import type { LockFenceConnection, LockFenceStatement } from './lock-fence.interface.js';
import { positionalSql } from './positional-sql.util.js';

/**
 * Fenced transactions in the application's own data layer: a business transaction opened with `pg`, `mysql2` (or,
 * through `statement`, any layer that sends SQL) commits only while the grant is held. The fence is the transaction's
 * last statement: it records "business done" for the grant, or finds the grant lost (reaped, released, forced, or
 * its lease over) and throws `LockLostError`, so that the transaction rolls back. From the fence to the end of the
 * transaction, no other holder can be granted the locks: the rows the fence locked hold off every end of the grant.
 *
 * ```ts
 * const client = await pool.connect();
 * await client.query('BEGIN');
 * await client.query('UPDATE loans SET balance = balance - $1 WHERE id = $2', [amount, id]);
 * await fence.fenceAndCommit(client, stamp); // LockLostError: rolled back
 * ```
 * It fences grants of this process (`LockService.tryLocks`, `currentLock()` in a `@WithLocks` method), on the
 * module's database. See docs/data-layers.md.
 * @publicApi
 */
@Injectable()
export class LockFence {
  private readonly dialect: LockDialect;

  /** @internal Nest's injector creates the service: inject `LockFence`. */
  constructor(
    @Inject(LOCK_DATA_SOURCE) dataSource: Pick<DataSource, 'options'>,
    protected readonly leases: LockLeases,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
  ) {
    this.dialect = lockDialectOf(dataSource);
  }

  /**
   * The fence of `stamp` as SQL and parameters, for a data layer that sends it itself (see `LockFenceStatement` for
   * how to read its result). It does not check the grant: `fence` and `fenceAndCommit` also refuse a grant this
   * process already knows lost, and tell its signal.
   * @throws InvalidLockArgumentError for a stamp `tryLocks` cannot have returned.
   */
  statement(stamp: number): LockFenceStatement {
    assertStamp(stamp);
    return this.statementOf(this.dialect === 'mysql' ? MYSQL_FENCE : POSTGRES_FENCE, stamp);
  }

  /**
   * Marks the transaction that `execute` runs in as the one the fences of `stamp` (and of the grants it relies on)
   * must run in, first thing in it (`fenceEach(…, true)` then checks it): PostgreSQL cannot otherwise tell a fence
   * sent in autocommit or on another connection. MySQL/MariaDB need no mark (their fence checks the transaction).
   * @internal
   */
  async markTransaction(stamp: number, execute: (statement: LockFenceStatement) => Promise<unknown>): Promise<void> {
    if (this.dialect !== 'postgres') return;
    try {
      await execute(this.statementOf(MARK_FENCED_TRANSACTION, stamp));
    } catch (error) {
      throw toLockError(error, 'mark the fenced transaction', false);
    }
  }

  /** `sql` (a statement of the lock tables, $1 stamp, $2 app id) as a `LockFenceStatement` of `stamp`. */
  private statementOf(sql: string, stamp: number): LockFenceStatement {
    const text = inLockTables(sql, this.options.tables);
    const params = [stamp, this.options.appId] as const;
    return { sql: text, params, dialect: this.dialect, positional: positionalSql(text, params) };
  }

  /** The fence of `stamp` that fences only in the transaction `markTransaction` marked (PostgreSQL). */
  private markedStatement(stamp: number): LockFenceStatement {
    assertStamp(stamp);
    return this.dialect === 'postgres' ? this.statementOf(FENCE_IN_MARKED_TRANSACTION, stamp) : this.statement(stamp);
  }

  /**
   * Sends the fence of `stamp` on `connection`, inside its transaction: call it last, then COMMIT. The COMMIT's
   * outcome is yours to see: the grant's signal may fire while it is in flight (`fenceAndCommit` holds it off). On any
   * error the transaction is rolled back on `connection` before it is thrown (the connection destroyed if that fails),
   * so the connection goes back to its pool with nothing open.
   * @throws LockLostError when the grant is lost: rolled back.
   * @throws FenceOutsideTransactionError when `connection` is not inside BEGIN: rolled back, nothing fenced.
   * @throws LockStoreError when the statement failed in the database: rolled back.
   * @throws InvalidLockArgumentError for a bad stamp, or a pool or callback-style connection.
   */
  async fence(connection: LockFenceConnection, stamp: number): Promise<void> {
    assertTransactionConnection(connection);
    try {
      assertOpenTransaction(connection, stamp);
      await this.send(this.checked(stamp), queryOf(connection));
    } catch (error) {
      await rollBack(connection);
      throw error;
    }
  }

  /**
   * Sends the fence of `stamp` through `execute`, your data layer's way to run SQL inside its transaction, e.g. with
   * Kysely `(s) => trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params]))`; call it last in the transaction. It
   * reads what `execute` returns as `pg`, `mysql2`, Kysely, Knex (`raw`), Drizzle (`execute`) or Prisma
   * (`$executeRawUnsafe`) return it. Prefer `transaction`, which sends it through the transaction's own handle and
   * cannot forget it.
   * @throws LockLostError when the grant is lost: let the transaction roll back.
   * @throws FenceOutsideTransactionError when it ran outside an open transaction (MariaDB): let it roll back.
   * @throws LockStoreError when the statement failed in the database.
   * @throws InvalidLockArgumentError for a bad stamp, or a result of `execute` that is none of those shapes.
   */
  async fenceWith(stamp: number, execute: (statement: LockFenceStatement) => Promise<unknown>): Promise<void> {
    await this.send(this.checked(stamp), execute);
  }

  /**
   * Runs `work` in a transaction of your data layer opened by `runner` (the `LockTransactionRunner` that
   * `@WithLocks({ transaction: { runner } })` takes), and sends the fence of `stamp` after it, as the transaction's
   * last statement, through `runner.execute` on the very transaction object `work` was given: it cannot be
   * forgotten, nor sent on another handle. From the fence until the runner settles, the grant's lease expiry waits for
   * the outcome; once it committed, the grant is never declared lost: release it next.
   * ```ts
   * await fence.transaction(stamp, kyselyTransactions, async (trx) => {
   *   await trx.updateTable('loans').set({ balance: 0 }).where('id', '=', id).execute();
   * });
   * ```
   * The caller gets one outcome: the work's value (committed), `LockLostError` (the grant was lost: rolled back,
   * nothing written), the work's own error (rolled back), or `LockStoreError` (the BEGIN failed, nothing written; or
   * the COMMIT did: `outcomeUnknown`, unless the server said it rolled back, e.g. a Galera certification failure,
   * when nothing was written and the transaction may be run again; `LockLostError` if the grant ended meanwhile).
   * @throws LockLostError when the grant is lost, before the transaction opens or at its fence.
   * @throws LockConfigurationError when `runner.run` resolved without running `work` and the fence (nothing written).
   * @throws InvalidLockArgumentError for a bad stamp, or a runner without `run` and `execute`.
   */
  async transaction<Tx, T>(
    stamp: number,
    runner: LockTransactionRunner<Tx>,
    work: (tx: Tx) => Promise<T>,
    options: LockTransactionRunOptions = {},
  ): Promise<T> {
    assertRunner(runner, work);
    this.checked(stamp);
    const statement = this.markedStatement(stamp);
    let started = false;
    let inFlight = false;
    let fenced = false;
    let value: T;
    try {
      value = await runner.run(async (tx) => {
        started = true;
        await this.markTransaction(stamp, (s) => runner.execute(tx, s));
        const result = await work(tx);
        this.checked(stamp);
        this.leases.awaitCommit([stamp]);
        inFlight = true;
        await this.send(statement, (s) => runner.execute(tx, s), true);
        fenced = true;
        return result;
      }, options);
    } catch (error) {
      const outcome = runnerOutcomeOf(error, started, fenced);
      if (inFlight) this.leases.commitEnded([stamp], { committed: false, failure: commitFailureReason(outcome) });
      throw fenced ? await this.rolledBackOutcome(stamp, outcome) : outcome;
    }
    if (!fenced) {
      throw new LockConfigurationError(
        'LockFence.transaction: the runner resolved before the work and its fence had run in its transaction: its ' +
          'run(work) must return (or await) work(tx)',
      );
    }
    this.leases.commitEnded([stamp], { committed: true, releasing: new Set([stamp]) });
    return value;
  }

  /**
   * The fence of `stamp` then COMMIT on `connection`, as `@WithLocks({ transaction: true })` does: while the COMMIT is
   * in flight the grant's lease expiry waits for its outcome, and once it committed the grant is never declared lost
   * (its commit is the holder's outcome): release it next. On any other outcome the transaction is rolled back on
   * `connection` (the connection destroyed if that fails) before the error is thrown, so that the connection goes
   * back to its pool with nothing open.
   * @throws LockLostError when the grant is lost: rolled back, nothing committed.
   * @throws FenceOutsideTransactionError when `connection` is not inside BEGIN: rolled back, nothing fenced.
   * @throws LockStoreError when the fence failed (rolled back), or the COMMIT did (`outcomeUnknown`: it may have
   *   been applied; false when the server said it rolled back, e.g. a Galera certification failure: nothing was
   *   written, run it again; `LockLostError` instead when the grant ended meanwhile).
   * @throws InvalidLockArgumentError for a bad stamp, or a pool or callback-style connection.
   */
  async fenceAndCommit(connection: LockFenceConnection, stamp: number): Promise<void> {
    assertTransactionConnection(connection);
    let statement: LockFenceStatement;
    try {
      assertOpenTransaction(connection, stamp);
      statement = this.checked(stamp);
    } catch (error) {
      await rollBack(connection);
      throw error;
    }
    this.leases.awaitCommit([stamp]);
    try {
      try {
        await this.send(statement, queryOf(connection));
      } catch (error) {
        await rollBack(connection);
        throw error;
      }
      await this.commit(connection);
    } catch (error) {
      this.leases.commitEnded([stamp], { committed: false, failure: commitFailureReason(error) });
      throw await this.rolledBackOutcome(stamp, error);
    }
    this.leases.commitEnded([stamp], { committed: true, releasing: new Set([stamp]) });
  }

  /**
   * Sends the fence of each of `stamps` (in stamp order, as every fence takes its rows) through `execute`: the fence of
   * `@WithLocks({ transaction: { runner } })`, whose runner checked the grants are held here just before. `marked`:
   * the transaction was marked (`markTransaction`) and each fence fences only inside it.
   * @internal
   */
  async fenceEach(
    stamps: readonly number[],
    execute: (statement: LockFenceStatement) => Promise<unknown>,
    marked = false,
  ): Promise<void> {
    for (const stamp of stamps) {
      await this.send(marked ? this.markedStatement(stamp) : this.statement(stamp), execute, marked);
    }
  }

  /** The statement of `stamp`, once the stamp is checked and the grant is not known lost here. */
  private checked(stamp: number): LockFenceStatement {
    const statement = this.statement(stamp);
    // The holder's side: a grant whose lease ran out on this process's clock is not committed on.
    if (!this.leases.isHeld(stamp)) {
      if (this.leases.knows(stamp) || this.leases.lossReason(stamp) !== undefined) this.leases.markTold(stamp);
      throw new LockLostError(stamp, this.leases.lossReason(stamp) ?? 'it is not held by this process (released, lost or never taken)');
    }
    return statement;
  }

  /** Sends the fence; a grant found lost is told to its signal and thrown as `LockLostError`. */
  protected async send(
    statement: LockFenceStatement,
    execute: (statement: LockFenceStatement) => Promise<unknown>,
    marked = false,
  ): Promise<void> {
    const [stamp] = statement.params;
    let result: unknown;
    try {
      result = await execute(statement);
    } catch (error) {
      // Above READ COMMITTED: the grant's lock rows were deleted after the transaction's snapshot.
      if (this.dialect === 'postgres' && isRowChangedSinceSnapshot(error)) throw this.lost(stamp);
      throw this.dialect === 'mysql' ? toMysqlLockError(error, 'fence', false) : toLockError(error, 'fence', false);
    }
    if (!isFenced(this.dialect, result)) throw await this.notFenced(stamp, marked || this.dialect === 'mysql');
  }

  /**
   * Why the fence of `stamp` fenced nothing. A `guarded` fence (MariaDB's, and PostgreSQL's in a marked transaction)
   * also refuses to run outside its transaction, so a grant still held here and live in the database means that;
   * anything else is a lost grant.
   */
  private async notFenced(stamp: number, guarded: boolean): Promise<LockError> {
    if (guarded && this.leases.isHeld(stamp) && (await this.leases.isLiveInDatabase(stamp))) {
      const found =
        this.dialect === 'mysql'
          ? 'autocommit: no transaction was open where it ran'
          : 'it ran where the transaction the runner opened is not: autocommit, the pool, or another connection';
      return new FenceOutsideTransactionError(stamp, found);
    }
    return this.lost(stamp);
  }

  private async commit(connection: LockFenceConnection): Promise<void> {
    try {
      await connection.query('COMMIT', []);
    } catch (error) {
      // The COMMIT may have been applied before the failure was seen, unless the server said it rolled back.
      throw commitFailureOf(error);
    }
  }

  /**
   * The outcome of a fenced COMMIT that the server rolled back (`LockStoreError` with a known outcome): on a Galera
   * cluster, a certification failure, most often because the grant was ended on another node meanwhile (the reaper,
   * a forced release: both write the row the fence wrote). A grant no longer live in the database is `LockLostError`
   * (told to its signal); one still live, a conflict with other work: nothing was written, run it again. Any other
   * outcome is returned as it is.
   */
  private async rolledBackOutcome(stamp: number, outcome: unknown): Promise<unknown> {
    if (!(outcome instanceof LockStoreError) || outcome.outcomeUnknown || outcome.operation !== 'commit the fenced transaction') {
      return outcome;
    }
    return (await this.leases.isEndedInDatabase(stamp)) ? this.lost(stamp) : outcome;
  }

  /** `stamp` found lost by its fence: told to its signal, and the error to throw. */
  protected lost(stamp: number): LockLostError {
    const reason = 'the fence found it reaped, released, forced or its lease over';
    this.leases.lose(stamp, reason);
    this.leases.markTold(stamp);
    return new LockLostError(stamp, reason);
  }
}

/** Refuses a runner that cannot open a transaction or send the fence, and a work that is not a function. */
function assertRunner(runner: unknown, work: unknown): void {
  const value = runner as unknown as Record<string, unknown> | null;
  if (value === null || typeof value !== 'object' || typeof value.run !== 'function' || typeof value.execute !== 'function') {
    throw new InvalidLockArgumentError('runner', value, 'a LockTransactionRunner: an object with run(work, options) and execute(tx, statement)');
  }
  if (typeof work !== 'function') throw new InvalidLockArgumentError('work', work, 'a function (tx) => Promise, run inside the transaction');
}
