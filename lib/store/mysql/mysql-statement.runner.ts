import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection, ConnectionOptions, Pool, PoolConnection } from 'mysql2';
import type { DataSource } from 'typeorm';
import { LockConfigurationError, type LockError } from '../../errors/index.js';
import { isMysqlConnectionFailure, isMysqlReadOnlyError, isTransientMysqlError, toMysqlLockError } from './mysql-error.util.js';
import type { StatementRunnerOptions } from '../statement-runner.options.js';
import { PoolCheckoutTimeoutError } from '../pool-checkout.util.js';
import { checkoutMysqlConnection, discardMysqlConnection } from './mysql-checkout.util.js';
import { DEFAULT_LOCK_TABLES, inLockTables, type LockTables } from '../lock-tables.util.js';

/** Smallest pool the library works with: the instance session, and statements beside it. */
const MIN_POOL_SIZE = 2;

/** What `mysql2` answers to a statement that writes. @internal */
export interface MysqlWriteResult {
  readonly affectedRows: number;
  readonly insertId: number;
}

/** What a `CALL` answered: the rows of its first result set, if it sent one, and its OK packet's affected rows. @internal */
export interface MysqlCallAnswer<R> {
  readonly rows?: R[];
  readonly affectedRows: number;
}

/** The statements of one transaction. @internal */
export interface MysqlTransaction {
  /** Rows of a SELECT. */
  select<R>(sql: string, values?: readonly unknown[]): Promise<R[]>;
  /** Affected rows and the generated id of an INSERT, UPDATE or DELETE. */
  write(sql: string, values?: readonly unknown[]): Promise<MysqlWriteResult>;
}

/** The statements of a transaction of `MysqlStatementRunner.transaction`, which may be rolled back on purpose. @internal */
export interface MysqlRollbackableTransaction extends MysqlTransaction {
  /** The transaction is rolled back, not committed, when the work returns (its writes served only to decide). */
  rollBackAtEnd(): void;
}

/**
 * Runs the lock statements on a TypeORM DataSource's own `mysql2` pool: transactions at READ COMMITTED, retries,
 * client-side timeouts, and the mapping of driver errors to `LockError`s.
 * @internal
 */
export class MysqlStatementRunner {
  private retryCount = 0;

  /**
   * @param failed sees every error a statement ends with, once retries are over (for counting them), and returns the
   *   error to throw.
   */
  constructor(
    private readonly dataSource: DataSource,
    private readonly options: StatementRunnerOptions,
    private readonly failed: (error: LockError) => LockError = (error) => error,
  ) {}

  /** Where the lock tables are. */
  get tables(): LockTables {
    return this.options.tables ?? DEFAULT_LOCK_TABLES;
  }

  /** `sql`, written for the lock tables' prefix (every statement sent goes through here). */
  sql(sql: string): string {
    return inLockTables(sql, this.tables);
  }

  /** Round trips repeated after a transient failure since start. */
  get retries(): number {
    return this.retryCount;
  }

  /** Counts one retry made by a caller (a session opened again). */
  countRetry(): void {
    this.retryCount++;
  }

  /**
   * Runs `work` in one transaction at READ COMMITTED (each statement reads what is committed when it starts, as the
   * checks need), on a pool connection, and commits. The whole transaction runs again, with exponential backoff and
   * full jitter, after a deadlock or a lock wait timeout (InnoDB rolled it back), and after a connection failure
   * before its COMMIT was sent (the server rolls back a transaction whose connection is gone). A connection lost once
   * the COMMIT was sent is never retried: the transaction may have committed (`outcomeUnknown` when it `grants`).
   * Every statement times out on the client after `queryTimeoutMs`; its connection is then destroyed, and the
   * transaction is not run again: it already waited its time (on a frozen network each try would wait as long again).
   * A pool connection not had within `queryTimeoutMs` fails the transaction the same way.
   */
  transaction<T>(operation: string, grants: boolean, work: (tx: MysqlRollbackableTransaction) => Promise<T>): Promise<T> {
    return this.retrying(operation, grants, async (tx, committing) => {
      await tx.write('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
      await tx.write('START TRANSACTION');
      let result: T;
      let rollBack = false;
      try {
        result = await work({ ...tx, rollBackAtEnd: () => void (rollBack = true) });
        if (rollBack) {
          await tx.write('ROLLBACK');
          return result;
        }
      } catch (error) {
        // Not on a broken connection, nor behind a statement that timed out and still runs on the server (the driver
        // would queue the ROLLBACK behind it, for as long as the server waits): destroying the connection rolls back.
        if (!isMysqlConnectionFailure(error)) await tx.write('ROLLBACK').catch(() => undefined);
        throw error;
      }
      committing();
      try {
        await tx.write('COMMIT');
      } catch (error) {
        // A COMMIT refused without ending the transaction (a Galera node out of the primary component: 1047) would
        // leave it open on the pooled connection, and every later transaction there would fail (1568).
        if (!isMysqlConnectionFailure(error)) await tx.write('ROLLBACK').catch(() => undefined);
        throw error;
      }
      return result;
    });
  }

  /**
   * Calls a stored procedure that runs and commits a transaction of its own: one round trip. Retried like a
   * transaction after a deadlock or a lock wait timeout (the procedure rolled back and raised it again). A connection
   * lost once the call was sent is never retried: the procedure may have committed (`outcomeUnknown` when it
   * `grants`). Resolves with the rows of the procedure's first result set.
   */
  async call<R>(operation: string, grants: boolean, sql: string, values: readonly unknown[]): Promise<R[]> {
    return (await this.callAnswer<R>(operation, grants, sql, values)).rows ?? [];
  }

  /**
   * `call`, for a procedure that may answer no result set: the rows of its first result set (undefined without one)
   * and the affected rows of the call's OK packet (0 with a result set).
   */
  callAnswer<R>(operation: string, grants: boolean, sql: string, values: readonly unknown[]): Promise<MysqlCallAnswer<R>> {
    return this.retrying(operation, grants, async (tx, committing) => {
      committing();
      // A CALL answers with its result sets, then the call's own status; without a result set, with that status alone.
      const answer = await tx.select<unknown>(sql, values);
      if (!Array.isArray(answer)) return { affectedRows: Number((answer as { affectedRows?: unknown }).affectedRows ?? 0) };
      const [rows] = answer;
      return { rows: Array.isArray(rows) ? (rows as R[]) : [], affectedRows: 0 };
    });
  }

  /** The rows of one SELECT, in autocommit (retried like a transaction). */
  select<R>(operation: string, sql: string, values: readonly unknown[] = []): Promise<R[]> {
    return this.retrying(operation, false, (tx) => tx.select<R>(sql, values));
  }

  /**
   * One statement that writes, in a transaction of its own at READ COMMITTED: at MySQL's default REPEATABLE READ, a
   * DELETE that scans a range or reads another table in a subquery would lock gaps that new grants insert into.
   */
  write(operation: string, sql: string, values: readonly unknown[] = []): Promise<MysqlWriteResult> {
    return this.transaction(operation, false, (tx) => tx.write(sql, values));
  }

  /** Runs `body` on a pool connection, again after what is safe to retry (see `transaction`). */
  private async retrying<T>(
    operation: string,
    grants: boolean,
    body: (tx: MysqlTransaction, committing: () => void) => Promise<T>,
  ): Promise<T> {
    const { maxAttempts, initialDelayMs, maxDelayMs } = this.options.retry;
    for (let attempt = 1; ; attempt++) {
      let committing = false;
      try {
        return await this.withConnection((connection) =>
          body(this.transactionOn(connection), () => {
            committing = true;
          }),
        );
      } catch (error) {
        const unsent = !committing && isMysqlConnectionFailure(error) && !usedItsTime(error);
        const retry = isTransientMysqlError(error) || unsent;
        if (!retry || attempt >= maxAttempts) throw this.failed(toMysqlLockError(error, operation, grants && committing));
        this.retryCount++;
        await sleep(Math.random() * Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1)));
      }
    }
  }

  /**
   * A connection of its own, out of the DataSource's pool, for a session that outlives one statement (the instance
   * lock). It and the statements need a pool of at least `MIN_POOL_SIZE`.
   */
  async connect(operation: string): Promise<PoolConnection> {
    const pool = this.pool();
    const max = (pool as unknown as { config?: { connectionLimit?: number } }).config?.connectionLimit ?? 10;
    if (max < MIN_POOL_SIZE) {
      throw new LockConfigurationError(
        `The lock DataSource's pool allows ${max} connection(s); LockModule keeps 1 for itself (instance lock) and ` +
          `needs at least ${MIN_POOL_SIZE}: raise \`extra.connectionLimit\` (or poolSize) of the DataSource`,
      );
    }
    try {
      return await checkoutMysqlConnection(pool, this.options.queryTimeoutMs);
    } catch (error) {
      throw toMysqlLockError(error, operation, false);
    }
  }

  /**
   * A connection outside the DataSource's pool, with the pool's settings (undefined when the driver does not expose
   * them): for a session that sleeps in the server (the doorbell) without taking a connection from the statements.
   * It connects with its first statement; the caller destroys it.
   */
  openOutsidePool(): Connection | undefined {
    const config = (this.pool() as unknown as { config?: { connectionConfig?: ConnectionOptions } }).config?.connectionConfig;
    const mysql = (this.dataSource.driver as unknown as { mysql?: { Connection?: new (options: { config: unknown }) => Connection } })
      .mysql;
    if (!config || typeof mysql?.Connection !== 'function') return undefined;
    return new mysql.Connection({ config });
  }

  /**
   * Runs `work` on one pool connection, its statements in autocommit, never retried: for statements that must share
   * a session (a check, then a `KILL` that relies on it).
   */
  onConnection<T>(work: (tx: MysqlTransaction, connection: PoolConnection) => Promise<T>): Promise<T> {
    return this.withConnection((connection) => work(this.transactionOn(connection), connection));
  }

  /** The statements of a transaction on `connection`, each bounded by `queryTimeoutMs`. */
  transactionOn(connection: PoolConnection | Connection): MysqlTransaction {
    const send = <R>(sql: string, values: readonly unknown[]): Promise<R> =>
      new Promise<R>((resolve, reject) =>
        connection.query(
          { sql: this.sql(sql), values: [...values], timeout: this.options.queryTimeoutMs },
          (error: unknown, result: unknown) => (error ? reject(error) : resolve(result as R)),
        ),
      );
    return {
      select: (sql, values = []) => send(sql, values),
      write: async (sql, values = []) => {
        const result = await send<Partial<MysqlWriteResult>>(sql, values);
        return { affectedRows: Number(result.affectedRows ?? 0), insertId: Number(result.insertId ?? 0) };
      },
    };
  }

  /** Runs `work` on a pool connection, handed back afterwards, or destroyed when it broke (or a statement timed out). */
  private async withConnection<T>(work: (connection: PoolConnection) => Promise<T>): Promise<T> {
    const connection = await checkoutMysqlConnection(this.pool(), this.options.queryTimeoutMs);
    // A checked-out connection has no listener of the pool: a server that ends the session right after the answer
    // would emit an 'error' nobody handles, which crashes the process.
    connection.on('error', ignore);
    let broken = false;
    try {
      return await work(connection);
    } catch (error) {
      // A connection to a read-only server (a demoted primary a proxy still routes to) goes too: the next finds the primary.
      broken = isMysqlConnectionFailure(error) || isMysqlReadOnlyError(error);
      throw error;
    } finally {
      // A destroyed connection keeps its listener: it may still emit an 'error' while it goes.
      if (broken) discardMysqlConnection(connection);
      else {
        connection.off('error', ignore);
        connection.release();
      }
    }
  }

  private pool(): Pool {
    const pool = (this.dataSource.driver as unknown as { pool?: Pool }).pool;
    if (!this.dataSource.isInitialized || !pool) {
      throw new LockConfigurationError('The lock DataSource is not initialized (or was destroyed)');
    }
    return pool;
  }
}

/** What `mysql2` calls a statement that timed out on the client (its `timeout`). */
const MYSQL_STATEMENT_TIMEOUT = 'PROTOCOL_SEQUENCE_TIMEOUT';

/** A client-side timeout, of the statement or of the pool's checkout: the transaction already waited its time. */
function usedItsTime(error: unknown): boolean {
  return error instanceof PoolCheckoutTimeoutError || (error as { code?: unknown } | null)?.code === MYSQL_STATEMENT_TIMEOUT;
}

/** The listener of a connection's errors that its statement reports anyway. */
function ignore(): void {}
