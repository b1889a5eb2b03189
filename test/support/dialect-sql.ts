import mysql from 'mysql2/promise';
import { namesOf, type TestDialect } from './dialects.js';
import { positional } from './mysql-test-database.js';
import { connectClient, type TestDatabase } from './test-database.js';

/** Which dialect a test's SQL is for. */
type Dialect = Pick<TestDialect, 'name'>;

const isMysql = (dialect: Dialect): boolean => dialect.name === 'MariaDB';

/** The database's clock as the lock tables hold it: `now()`, or `UTC_TIMESTAMP(6)` on MySQL/MariaDB. */
export function dbNow(dialect: Dialect): string {
  return isMysql(dialect) ? 'UTC_TIMESTAMP(6)' : 'now()';
}

/** The time expression `expression` moved by `seconds` (negative: earlier), in the dialect's SQL. */
export function shifted(dialect: Dialect, expression: string, seconds: number): string {
  return isMysql(dialect) ? `(${expression} + INTERVAL ${seconds} SECOND)` : `(${expression} + interval '${seconds} seconds')`;
}

/** The milliseconds from the database's clock to the time column `column` (negative once past), as a number. */
export function msUntil(dialect: Dialect, column: string): string {
  return isMysql(dialect)
    ? `(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), ${column}) / 1000)`
    : `(extract(epoch FROM ${column} - now()) * 1000)::float8`;
}

/** A row of `locking_log` as the tests read it, the same on both dialects. */
export interface TestLogRow {
  stamp: string;
  app_id: string;
  status: string;
  lock_names: string[];
  lock_modes: string[];
  version: number;
  /** Milliseconds left on the lease by the database's clock (negative once it ended). */
  lease_left_ms: number;
  ended: Date | null;
}

/** Every row of `locking_log`, by stamp, in the same shape on both dialects. */
export async function logRowsOf(db: TestDatabase, dialect: Dialect): Promise<TestLogRow[]> {
  const rows = await db.query<Record<keyof TestLogRow, unknown>>(
    `SELECT stamp, app_id, status, lock_names, lock_modes, version, ended, ${msUntil(dialect, 'lease_expires')} AS lease_left_ms
       FROM locking_log ORDER BY stamp`,
  );
  return rows.map((row) => ({
    stamp: String(row.stamp),
    app_id: String(row.app_id),
    status: String(row.status),
    lock_names: namesOf(row.lock_names),
    lock_modes: namesOf(row.lock_modes),
    version: Number(row.version),
    lease_left_ms: Number(row.lease_left_ms),
    ended: (row.ended as Date | null) ?? null,
  }));
}

/** Ends the lease of every live grant (or of `stamp`) in the database, as if its holder had been frozen past it. */
export async function expireLeases(db: TestDatabase, dialect: Dialect, stamp?: number): Promise<void> {
  const where = stamp === undefined ? '' : ' WHERE stamp = $1';
  await db.query(
    `UPDATE locking_log SET lease_expires = ${shifted(dialect, dbNow(dialect), -1)}${where}`,
    stamp === undefined ? [] : [stamp],
  );
}

/** A raw session of a test on its database (outside any lock engine), for holding row locks by hand. */
export interface RawSession {
  /** Runs one statement (`$1`, `$2`, … placeholders on both dialects); resolves with its rows. */
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
  end(): Promise<void>;
}

/** Opens a raw session on `db`. */
export async function openSession(db: TestDatabase, dialect: Dialect): Promise<RawSession> {
  if (!isMysql(dialect)) {
    const client = await connectClient(db.url);
    return { query: async (text, values) => (await client.query(text, values)).rows, end: () => client.end() };
  }
  const connection = await mysql.createConnection({ uri: db.url, supportBigNumbers: true, bigNumberStrings: true });
  connection.on('error', () => undefined); // a session the server ends fails its next query instead
  return {
    async query(text, values) {
      const { sql, params } = positional(text, values);
      return (await connection.query(sql, params))[0] as never;
    },
    end: () => connection.end(),
  };
}

/** The name of the test database (MySQL/MariaDB). */
async function mysqlDatabaseName(db: TestDatabase): Promise<string> {
  const [row] = await db.query<{ name: string }>('SELECT DATABASE() AS name');
  return row!.name;
}

/** The text of InnoDB's status report. */
async function innodbStatus(db: TestDatabase): Promise<string> {
  const [row] = await db.query<{ Status: string }>('SHOW ENGINE INNODB STATUS');
  return row?.Status ?? '';
}

/**
 * The sessions of the test database that wait for a row or table lock now. On MySQL/MariaDB from InnoDB's status
 * report: MariaDB's `information_schema.INNODB_TRX` may leave out a transaction whose first statement waits.
 */
export async function sessionsWaitingForALock(db: TestDatabase, dialect: Dialect): Promise<number> {
  if (!isMysql(dialect)) {
    const rows = await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    return rows.length;
  }
  const name = await mysqlDatabaseName(db);
  const transactions = (await innodbStatus(db)).split('\nTRANSACTIONS\n')[1] ?? '';
  const waits = [...transactions.matchAll(/FOR THIS LOCK TO BE GRANTED:\n[^\n]*? table `([^`]*)`/g)];
  return waits.filter((wait) => wait[1] === name).length;
}

/**
 * What the server tells of the deadlocks of the test database so far: equal before and after a test in which none
 * happened. PostgreSQL counts them per database. InnoDB keeps only the latest deadlock of the whole server (and the
 * MySQL store retries a deadlock's victim quietly): its report, when it names this database's tables, else ''. A
 * deadlock elsewhere on the server after one here can hide that one, never make one up.
 */
export async function deadlockEvidence(db: TestDatabase, dialect: Dialect): Promise<unknown> {
  if (!isMysql(dialect)) {
    const [row] = await db.query<{ n: string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()');
    return Number(row?.n);
  }
  const name = await mysqlDatabaseName(db);
  const latest = /LATEST DETECTED DEADLOCK\n-+\n([\s\S]*?)\n-+\nTRANSACTIONS\n/.exec(await innodbStatus(db))?.[1] ?? '';
  return latest.includes(`\`${name}\``) ? latest : '';
}
