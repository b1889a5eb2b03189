import { randomBytes } from 'node:crypto';
import type { Connection } from 'mysql2';
import { mysqlCodeOf } from './mysql-error.util.js';
import {
  ADD_RINGS_ROW,
  ARM_RINGS_ROW,
  BEGIN_ARMED,
  DELETE_DOORBELL,
  doorbellSleep,
  SELECT_CONNECTION_ID,
  UPSERT_DOORBELL,
} from './mysql-doorbell.queries.sql.js';
import { SHOW_WSREP_ON } from './mysql-lock.queries.sql.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';

/**
 * Timing of the doorbells (internal knobs: the tests shorten or lengthen them).
 * @internal
 */
export const doorbellTiming = {
  /** How long one sleep lasts before the doorbell sleeps again (s). @default 30 */
  sleepSeconds: 30,
  /** How long the doorbell stays open once the instance has no waiters (ms): a burst of waits opens it once. @default 1000 */
  lingerMs: 1000,
  /** How long after a failed or lost doorbell it is opened again (ms); the poll covers the gap. @default 200 */
  retryMs: 200,
  /** How long after the table was found missing (a database before the doorbells' migration) it is tried again (ms). @default 30000 */
  missingRetryMs: 30_000,
};

/** What the doorbell uses of the socket under a `mysql2` connection. */
interface DoorbellSocket {
  destroy(): void;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/** The socket under a `mysql2` connection (undocumented: guarded). */
function socketOf(connection: Connection): DoorbellSocket | undefined {
  return (connection as unknown as { stream?: DoorbellSocket }).stream;
}

/**
 * Ends `connection` at once. `mysql2`'s `destroy()` only half-closes the socket: the server goes on with a sleep under
 * way, and the socket (with the driver's statement timer) would keep the process alive until the sleep ends, up to
 * `sleepSeconds` after `app.close()`.
 */
function destroyNow(connection: Connection): void {
  connection.destroy();
  socketOf(connection)?.destroy();
}

/**
 * The rows of one statement on `connection`, bounded by `timeoutMs` on the client (the connection is then destroyed).
 * Bounded here rather than by the driver's `timeout`, whose timer outlives a connection destroyed under it.
 */
function query<R>(connection: Connection, sql: string, timeoutMs: number, values: readonly unknown[] = []): Promise<R[]> {
  return new Promise<R[]>((resolve, reject) => {
    const socket = socketOf(connection);
    const settle = () => {
      clearTimeout(timer);
      socket?.off('close', closed);
    };
    const closed = () => {
      settle();
      reject(Object.assign(new Error('the doorbell connection was closed'), { fatal: true }));
    };
    const timer = setTimeout(() => {
      settle();
      destroyNow(connection);
      reject(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true }));
    }, timeoutMs);
    socket?.once('close', closed);
    connection.query({ sql, values: [...values] }, (error: unknown, rows: unknown) => {
      settle();
      if (error) reject(error);
      else resolve(rows as R[]);
    });
  });
}

/**
 * The doorbell of an instance that has waiters (MySQL and MariaDB): one connection, outside the pool, sleeping in the
 * server (`SELECT /* nestjs-db-locks doorbell <tag> *\/ SLEEP(n)`), its connection id recorded in `locking_doorbells`.
 * A release by another instance of names these waiters wait for interrupts the sleep (`KILL QUERY`, see
 * `MysqlDoorbellRinger`): `rung` is called, and the doorbell sleeps again. A doorbell that fails (the connection
 * killed, the server gone) is dropped, and `open` may be called again after `doorbellTiming.retryMs`; meanwhile the
 * listener's poll covers. On a database without the table (migration not run) there is no doorbell. On a node of a
 * Galera cluster the sleep also holds the lock of the doorbell's rings row, so that a release on another node rings
 * it by writing that row (see `sleep`).
 * @internal
 */
export class MysqlDoorbell {
  private connection: Connection | undefined;
  private connectionId = 0;
  private opening = false;
  private wanted = false;
  private retryAt = 0;

  constructor(
    private readonly runner: MysqlStatementRunner,
    private readonly appId: string,
    private readonly queryTimeoutMs: number,
    private readonly rung: () => void,
  ) {}

  /** The connection id of the open doorbell (undefined when none is open). */
  get id(): number | undefined {
    return this.connection === undefined ? undefined : this.connectionId;
  }

  /** Opens the doorbell, unless it is open, opening, or failed less than `retryMs` ago. */
  open(): void {
    this.wanted = true;
    if (this.connection !== undefined || this.opening || performance.now() < this.retryAt) return;
    this.opening = true;
    void this.connect().finally(() => {
      this.opening = false;
    });
  }

  /** Closes the doorbell (its connection destroyed, its row deleted); `open` opens a new one. */
  close(): void {
    this.wanted = false;
    this.drop(0);
  }

  private async connect(): Promise<void> {
    let connection: Connection | undefined;
    try {
      connection = this.runner.openOutsidePool();
      if (connection === undefined) {
        this.retryAt = Number.POSITIVE_INFINITY; // a driver without the pool's settings: the poll only
        return;
      }
      // Stays attached after the end: a connection that breaks may emit 'error' while it is destroyed.
      connection.on('error', () => undefined);
      const tag = randomBytes(12).toString('hex');
      const [row] = await query<{ id: number | string }>(connection, SELECT_CONNECTION_ID, this.queryTimeoutMs);
      const id = Number(row?.id);
      const [wsrep] = await query<{ Value?: string }>(connection, SHOW_WSREP_ON, this.queryTimeoutMs);
      const galera = String(wsrep?.Value).toUpperCase() === 'ON';
      if (galera) await query(connection, this.runner.sql(ADD_RINGS_ROW), this.queryTimeoutMs, [this.appId]);
      // Beside the pool's statements, never counted as a failed lock operation (an older database has no table).
      await this.runner.onConnection((tx) => tx.write(UPSERT_DOORBELL, [this.appId, id, tag, id, tag]));
      if (!this.wanted) {
        destroyNow(connection);
        this.forget(id);
        return;
      }
      this.connection = connection;
      this.connectionId = id;
      void this.sleep(connection, tag, galera);
    } catch (error) {
      if (connection) destroyNow(connection);
      const missing = mysqlCodeOf(error) === 'ER_NO_SUCH_TABLE';
      this.retryAt = performance.now() + (missing ? doorbellTiming.missingRetryMs : doorbellTiming.retryMs);
    }
  }

  /**
   * Sleeps, again and again, until the doorbell is closed or its connection fails. On a node of a Galera cluster
   * (`galera`) each sleep runs armed when it can: inside a transaction that holds the doorbell's rings row
   * (`ARM_RINGS_ROW`), which a release on another node writes; the cluster then aborts that transaction (1213) and the
   * sleep with it. A ring that came while the doorbell was not armed (between an abort and the next arming, or while
   * another session held the row) shows in the row's count when it is armed again.
   */
  private async sleep(connection: Connection, tag: string, galera: boolean): Promise<void> {
    const seconds = doorbellTiming.sleepSeconds;
    const sql = doorbellSleep(tag, seconds);
    let armed = false;
    let rings: number | undefined;
    while (this.connection === connection) {
      let rung: boolean;
      try {
        if (galera && !armed) {
          await query(connection, BEGIN_ARMED, this.queryTimeoutMs);
          const [row] = await query<{ rings: number | string }>(connection, this.runner.sql(ARM_RINGS_ROW), this.queryTimeoutMs, [this.appId]);
          armed = row !== undefined;
          if (armed && rings !== undefined && Number(row?.rings) !== rings && this.connection === connection) this.rung();
          if (armed) rings = Number(row?.rings);
        }
        const [row] = await query<{ rung: number | string }>(connection, sql, seconds * 1000 + this.queryTimeoutMs);
        rung = Number(row?.rung) === 1;
      } catch (error) {
        const code = mysqlCodeOf(error);
        // 1213 while armed: a release on another node wrote the rings row, and the cluster aborted this transaction.
        if (armed && code === 'ER_LOCK_DEADLOCK') {
          armed = false;
          // The ring that aborted the transaction counted one: the next arming rings again if the count is past it (a
          // ring that came before the doorbell was armed again). Forgetting the count there lost such a ring: the
          // Galera wake-up spec saw a waiter on node 2 sleep to its deadline (14.8 s), twice, in CI.
          rings = rings === undefined ? undefined : rings + 1;
          rung = true;
        } else if (code === 'ER_QUERY_INTERRUPTED') {
          rung = true; // 1317: the sleep was interrupted with an error rather than with 1 (either answer means a ring)
        } else {
          if (this.connection === connection) this.drop(doorbellTiming.retryMs);
          return;
        }
      }
      if (rung && this.connection === connection) this.rung();
    }
  }

  /** Destroys the open connection and deletes its row; no new doorbell for `retryMs`. */
  private drop(retryMs: number): void {
    const connection = this.connection;
    if (connection === undefined) return;
    this.connection = undefined;
    this.retryAt = performance.now() + retryMs;
    destroyNow(connection);
    this.forget(this.connectionId);
  }

  /** Deletes the row of doorbell `id` (best effort: a stale row only costs a ring its check). */
  private forget(id: number): void {
    this.runner.onConnection((tx) => tx.write(DELETE_DOORBELL, [this.appId, id])).catch(() => undefined);
  }
}
