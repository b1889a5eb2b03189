import mysql from 'mysql2/promise';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectClient } from '../../support/test-database.js';

/**
 * Row locks of the sample's `investor_accounts` seen from outside the application, in each dialect: a transaction
 * of the test's own that holds one account, and how many transactions of the database wait for an account's row.
 */
export interface AccountLockProbe {
  /** Begins a transaction that holds `investor`'s account (`FOR UPDATE`) until `release` (idempotent). */
  hold(investor: string): Promise<{ release(): Promise<void> }>;
  /** How many transactions of the database wait for a row lock of `investor_accounts` now. */
  waiters(): Promise<number>;
  /** Ends the probe's connections. */
  close(): Promise<void>;
}

/** `fn` run at its first call only; every call answers its promise. */
function once(fn: () => Promise<unknown>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn().then(() => undefined));
}

const HOLD_ACCOUNT = 'SELECT 1 FROM investor_accounts WHERE investor = $1 FOR UPDATE';

/** PostgreSQL: backends of the database waiting for a row lock (not the lock library's own advisory locks). */
export async function postgresAccountLockProbe(url: string): Promise<AccountLockProbe> {
  const client = await connectClient(url);
  return {
    async hold(investor) {
      const holder = await connectClient(url);
      await holder.query('BEGIN');
      await holder.query(HOLD_ACCOUNT, [investor]);
      return { release: once(() => holder.query('COMMIT').then(() => holder.end())) };
    },
    async waiters() {
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory'
           AND query LIKE '%investor_accounts%'`,
      );
      return rows[0]?.n ?? 0;
    },
    close: () => client.end(),
  };
}

/**
 * MySQL / MariaDB: InnoDB transactions of the database in `LOCK WAIT` on a statement of `investor_accounts` (each
 * call takes at least 150 ms: see below).
 */
export async function mysqlAccountLockProbe(url: string): Promise<AccountLockProbe> {
  const connection = await mysql.createConnection({ uri: url });
  return {
    async hold(investor) {
      const holder = await mysql.createConnection({ uri: url });
      await holder.beginTransaction();
      await holder.query(HOLD_ACCOUNT.replace('$1', '?'), [investor]);
      return { release: once(() => holder.commit().then(() => holder.end())) };
    },
    async waiters() {
      // INNODB_TRX is a snapshot that InnoDB refreshes only when nobody read it for 100 ms: polled faster, it stays
      // as it was forever.
      await sleep(150);
      const [rows] = await connection.query<Array<mysql.RowDataPacket & { n: number }>>(
        `SELECT COUNT(*) AS n FROM information_schema.innodb_trx t
         JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
         WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE() AND t.trx_query LIKE '%investor_accounts%'`,
      );
      return Number(rows[0]?.n ?? 0);
    },
    close: () => connection.end(),
  };
}
