import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { InvalidLockArgumentError, LockLostError, LockStoreError } from '../errors/index.js';
import { LOCK_DATA_SOURCE, RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LockLeases } from '../services/lock-leases.service.js';
import { type LockDialect, lockDialectOf } from '../store/lock-dialect.util.js';
import { inLockTables } from '../store/lock-tables.util.js';
import { mysqlCodeOf, toMysqlLockError } from '../store/mysql/mysql-error.util.js';
import { MARK_BUSINESS_DONE as MYSQL_FENCE } from '../store/mysql/mysql-lock.queries.sql.js';
import { FENCE as POSTGRES_FENCE } from '../store/postgres/postgres-fence.queries.sql.js';
import { isRowChangedSinceSnapshot, sqlStateOf, toLockError } from '../store/postgres/pg-error.util.js';
import { assertStamp } from '../utils/lock-validation.util.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { positionalSql } from './positional-sql.util.js';
import type { LockFenceConnection, LockFenceStatement, LockFenceStep } from './lock-fence.interface.js';

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
    const sql = inLockTables(this.dialect === 'mysql' ? MYSQL_FENCE : POSTGRES_FENCE, this.options.tables);
    const params = [stamp, this.options.appId] as const;
    return { sql, params, dialect: this.dialect, positional: positionalSql(sql, params) };
  }

  /**
   * Sends the fence of `stamp` on `connection`, inside its transaction: call it last, then COMMIT. The COMMIT's
   * outcome is yours to see: the grant's signal may fire while it is in flight (`fenceAndCommit` holds it off).
   * @throws LockLostError when the grant is lost: roll the transaction back.
   * @throws LockStoreError when the statement failed in the database: roll the transaction back.
   * @throws InvalidLockArgumentError for a bad stamp, or a pool or callback-style connection.
   */
  async fence(connection: LockFenceConnection, stamp: number): Promise<void> {
    assertTransactionConnection(connection);
    await this.send(this.checked(stamp), queryOf(connection));
  }

  /**
   * Sends the fence of `stamp` through `execute`, your data layer's way to run SQL inside its transaction, e.g. with
   * Kysely `(s) => trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params]))`; call it last in the transaction. It
   * reads what `execute` returns as `pg`, `mysql2`, Kysely, Knex (`raw`), Drizzle (`execute`) or Prisma
   * (`$executeRawUnsafe`) return it. To also hold the grant's lease expiry until the commit's outcome, run the
   * transaction inside `transaction`.
   * @throws LockLostError when the grant is lost: let the transaction roll back.
   * @throws LockStoreError when the statement failed in the database.
   * @throws InvalidLockArgumentError for a bad stamp, or a result of `execute` that is none of those shapes.
   */
  async fenceWith(stamp: number, execute: (statement: LockFenceStatement) => Promise<unknown>): Promise<void> {
    await this.send(this.checked(stamp), execute);
  }

  /**
   * Runs `run`, a transaction of your data layer that commits when its Promise resolves (Kysely's
   * `db.transaction().execute`, Knex's and Drizzle's `transaction`, Prisma's interactive `$transaction`), handing it
   * the fence of `stamp` to send last (as `fenceWith` does). From the fence until `run` settles, the grant's lease
   * expiry waits for the outcome; once `run` resolved (committed), the grant is never declared lost: release it next.
   * ```ts
   * await fence.transaction(stamp, (fenced) =>
   *   db.transaction().execute(async (trx) => {
   *     await trx.updateTable('loans').set({ balance: 0 }).where('id', '=', id).execute();
   *     await fenced((s) => trx.executeQuery(CompiledQuery.raw(s.sql, [...s.params])));
   *   }),
   * );
   * ```
   * @throws LockLostError from the fence when the grant is lost (`run` rejects with it: nothing was committed).
   * @throws whatever `run` throws.
   */
  async transaction<T>(stamp: number, run: (fenced: LockFenceStep) => Promise<T>): Promise<T> {
    const statement = this.checked(stamp);
    let inFlight = false;
    const fenced: LockFenceStep = async (execute) => {
      if (inFlight) return; // fenced already: its rows stay locked until the transaction ends
      this.leases.awaitCommit([stamp]);
      inFlight = true;
      await this.send(statement, execute);
    };
    let value: T;
    try {
      value = await run(fenced);
    } catch (error) {
      if (inFlight) this.leases.commitEnded([stamp], { committed: false, failure: String(error) });
      throw error;
    }
    if (inFlight) this.leases.commitEnded([stamp], { committed: true, releasing: new Set([stamp]) });
    return value;
  }

  /**
   * The fence of `stamp` then COMMIT on `connection`, as `@WithLocks({ transaction: true })` does: while the COMMIT is
   * in flight the grant's lease expiry waits for its outcome, and once it committed the grant is never declared lost
   * (its commit is the holder's outcome): release it next. A lost grant rolls the transaction back (ROLLBACK is
   * sent).
   * @throws LockLostError when the grant is lost: nothing was committed.
   * @throws LockStoreError when the fence failed (rolled back), or the COMMIT did (`outcomeUnknown`: it may have
   *   been applied).
   * @throws InvalidLockArgumentError for a bad stamp, or a pool or callback-style connection.
   */
  async fenceAndCommit(connection: LockFenceConnection, stamp: number): Promise<void> {
    assertTransactionConnection(connection);
    const statement = this.checked(stamp);
    this.leases.awaitCommit([stamp]);
    try {
      try {
        await this.send(statement, queryOf(connection));
      } catch (error) {
        await connection.query('ROLLBACK', []).catch(() => undefined);
        throw error;
      }
      await this.commit(connection);
    } catch (error) {
      this.leases.commitEnded([stamp], { committed: false, failure: String(error) });
      throw error;
    }
    this.leases.commitEnded([stamp], { committed: true, releasing: new Set([stamp]) });
  }

  /**
   * Sends the fence of each of `stamps` (in stamp order, as every fence takes its rows) through `execute`: the fence of
   * `@WithLocks({ transaction: { runner } })`, whose runner checked the grants are held here just before.
   * @internal
   */
  async fenceEach(stamps: readonly number[], execute: (statement: LockFenceStatement) => Promise<unknown>): Promise<void> {
    for (const stamp of stamps) await this.send(this.statement(stamp), execute);
  }

  /** The statement of `stamp`, once the stamp is checked and the grant is not known lost here. */
  private checked(stamp: number): LockFenceStatement {
    const statement = this.statement(stamp);
    // The holder's side: a grant whose lease ran out on this process's clock is not committed on.
    if (!this.leases.isHeld(stamp)) throw new LockLostError(stamp, 'it is not held by this process (released, lost or never taken)');
    return statement;
  }

  /** Sends the fence; a grant found lost is told to its signal and thrown as `LockLostError`. */
  protected async send(statement: LockFenceStatement, execute: (statement: LockFenceStatement) => Promise<unknown>): Promise<void> {
    const [stamp] = statement.params;
    let result: unknown;
    try {
      result = await execute(statement);
    } catch (error) {
      // Above READ COMMITTED: the grant's lock rows were deleted after the transaction's snapshot.
      if (this.dialect === 'postgres' && isRowChangedSinceSnapshot(error)) throw this.lost(stamp);
      throw this.dialect === 'mysql' ? toMysqlLockError(error, 'fence', false) : toLockError(error, 'fence', false);
    }
    if (!isFenced(this.dialect, result)) throw this.lost(stamp);
  }

  private async commit(connection: LockFenceConnection): Promise<void> {
    try {
      await connection.query('COMMIT', []);
    } catch (error) {
      // The COMMIT may have been applied before the failure was seen.
      const code = this.dialect === 'mysql' ? mysqlCodeOf(error) : sqlStateOf(error);
      throw new LockStoreError('commit the fenced transaction', code, true, error);
    }
  }

  /** `stamp` found lost by its fence: told to its signal, and the error to throw. */
  protected lost(stamp: number): LockLostError {
    const reason = 'the fence found it reaped, released, forced or its lease over';
    this.leases.lose(stamp, reason);
    return new LockLostError(stamp, reason);
  }
}

/** `connection.query` as a fence executor. */
function queryOf(connection: LockFenceConnection): (statement: LockFenceStatement) => Promise<unknown> {
  return (statement) => connection.query(statement.sql, [...statement.params]);
}

/** What a data layer may return for a statement: a count, rows, or a result object. */
interface FenceResult {
  readonly rowCount?: unknown;
  readonly rows?: unknown;
  readonly affectedRows?: unknown;
  readonly numAffectedRows?: unknown;
}

/**
 * Whether the fence's result shows the grant fenced: one row returned (PostgreSQL) or affected (MySQL/MariaDB), as
 * `pg` (`rowCount`), `mysql2` (`[{ affectedRows }]`), Kysely (`rows`, `numAffectedRows`), Knex's `raw`, Drizzle's
 * `execute` and Prisma's `$executeRawUnsafe` (a count) return it.
 * @throws InvalidLockArgumentError for a result of none of these shapes.
 */
function isFenced(dialect: LockDialect, result: unknown): boolean {
  if (typeof result === 'number' || typeof result === 'bigint') return Number(result) === 1;
  if (Array.isArray(result)) {
    if (dialect === 'postgres') return result.length === 1; // the rows
    return isFenced(dialect, result[0]); // mysql2's [ResultSetHeader, fields]
  }
  const value = (result ?? {}) as FenceResult;
  const count =
    dialect === 'postgres'
      ? (value.rowCount ?? (Array.isArray(value.rows) ? value.rows.length : undefined))
      : (value.affectedRows ?? value.numAffectedRows);
  if (typeof count === 'number' || typeof count === 'bigint') return Number(count) === 1;
  throw new InvalidLockArgumentError(
    'result of the fence statement',
    typeof result,
    "what the data layer's query returns (pg's result, mysql2's [header], Kysely's { rows, numAffectedRows }, a count)",
  );
}

/** Refuses what cannot hold a transaction: a pool (`pg.Pool`, a mysql2 pool), or mysql2's callback API. */
function assertTransactionConnection(connection: LockFenceConnection): void {
  const value = connection as unknown as Record<string, unknown> | null;
  if (value === null || typeof value !== 'object' || typeof value.query !== 'function') {
    throw new InvalidLockArgumentError('connection', value, 'a pg client or mysql2/promise connection inside BEGIN');
  }
  if ('totalCount' in value || typeof value.getConnection === 'function') {
    throw new InvalidLockArgumentError(
      'connection',
      'a pool',
      'one connection of it inside BEGIN (pool.connect() / pool.getConnection()): a pool runs each statement on any connection',
    );
  }
  if (typeof value.promise === 'function') {
    throw new InvalidLockArgumentError('connection', 'a mysql2 callback-style connection', 'its promise form (connection.promise())');
  }
}
