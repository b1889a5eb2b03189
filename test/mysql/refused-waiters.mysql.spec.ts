import mysql from 'mysql2/promise';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

/**
 * A hot name on MySQL/MariaDB (issue 51): a release wakes every waiter of the name and all but one are refused. A
 * waiter's refused attempt (`locking_try_acquire_one` with a waiter) reads committed rows only: it neither waits for
 * its name's row nor writes it (before, each locked the row, queued behind the others and committed a write).
 */
describeOnMysql('a waiter\'s refused attempt on MySQL/MariaDB', () => {
  let db: TestDatabase;
  const sessions: mysql.Connection[] = [];
  const session = async () => {
    const connection = await mysql.createConnection({ uri: db.url });
    sessions.push(connection);
    await connection.query('SET SESSION innodb_lock_wait_timeout = 1');
    return connection;
  };
  const attempt = async (connection: mysql.Connection, name: string, waiter: string | null) => {
    const [results] = (await connection.query('CALL locking_try_acquire_one(?, ?, ?, ?, ?, ?, ?, ?)', [
      'hot-app', 'hot-app:1', name, 'W', 30_000, waiter, 1, 1,
    ])) as unknown as [Array<Array<{ stamp: string | number }>>];
    return Number(results[0]![0]!.stamp);
  };
  const grantsOf = async (name: string) =>
    Number((await db.query<{ grants: string }>('SELECT grants FROM locking_names WHERE lock_name = $1', [name]))[0]?.grants);

  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(sessions.map((connection) => connection.end()));
    await db?.drop();
  });

  it('is refused without waiting for the name\'s row, and writes nothing; an attempt that may grant still locks it', async () => {
    const holder = await session();
    const held = await attempt(holder, 'HOT', null);
    expect(held).toBeGreaterThan(0);
    const grants = await grantsOf('HOT');
    // Another transaction holds the name's row, as a grant in flight does until its commit.
    const locker = await session();
    await locker.query('START TRANSACTION');
    await locker.query(`SELECT lock_name FROM locking_names WHERE lock_name = 'HOT' FOR UPDATE`);
    const waiter = await session();
    const started = Date.now();
    expect(await attempt(waiter, 'HOT', 'w-1')).toBe(0);
    expect(Date.now() - started).toBeLessThan(900); // not the 1 s lock wait timeout
    // Without a waiter (the uncontended call) the row is locked first: it waits, and times out here.
    await expect(attempt(waiter, 'HOT', null)).rejects.toMatchObject({ errno: 1205 });
    await locker.query('ROLLBACK');
    expect(await grantsOf('HOT')).toBe(grants); // the refusals counted no grant
    // Once the name is free, the waiter's attempt locks the row, checks again and grants.
    await db.query(`UPDATE locking_log SET status = 'RELEASED', ended = UTC_TIMESTAMP(6) WHERE stamp = $1`, [held]);
    await db.query('DELETE FROM locking WHERE stamp = $1', [held]);
    expect(await attempt(waiter, 'HOT', 'w-1')).toBeGreaterThan(held);
    expect(await grantsOf('HOT')).toBe(grants + 1);
  });
});
