import mysql from 'mysql2/promise';
import { CREATE_MYSQL_LOCK_PROCEDURES } from '../../lib/migrations/sql/mysql-lock.procedures.sql.js';
import { DROP_MYSQL_LOCK_PROCEDURES_V3 } from '../../lib/migrations/sql/mysql-lock.procedures-v3.sql.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

/** Names that differ by case only, and another: compared byte for byte, each is a lock of its own. */
const NAMES = ['doc:a', 'doc:A', 'm'];
const MODES = ['R', 'W'] as const;

/** A small random generator with a seed, so that a failing state can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

interface State {
  held: Array<{ name: string; mode: string; stamp: number }>;
  permits: Array<{ name: string; mode: string; permits: number }>;
  waiters: Array<{ name: string; waiter: string; mode: string; seq: number; expired: boolean }>;
}

interface Request {
  names: string[];
  modes: string[];
  waiter: string | null;
  write: number;
  read: number;
}

function randomCase(next: () => number): { state: State; request: Request } {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
  const state: State = { held: [], permits: [], waiters: [] };
  const heldCount = Math.floor(next() * 4);
  for (let i = 0; i < heldCount; i++) state.held.push({ name: pick(NAMES), mode: pick(MODES), stamp: 100_000 + i });
  for (const name of NAMES) {
    for (const mode of MODES) if (next() < 0.25) state.permits.push({ name, mode, permits: 1 + Math.floor(next() * 3) });
  }
  const waiterCount = Math.floor(next() * 3);
  for (let i = 0; i < waiterCount; i++) {
    state.waiters.push({ name: pick(NAMES), waiter: `w${i}`, mode: pick(MODES), seq: 10 + i, expired: next() < 0.2 });
  }
  const size = next() < 0.6 ? 1 : 2;
  const names = [...new Set(Array.from({ length: size }, () => pick(NAMES)))].sort();
  return {
    state,
    request: {
      names,
      modes: names.map(() => pick(MODES)),
      waiter: pick([null, 'w0', 'w1']),
      write: 1 + Math.floor(next() * 2),
      read: 1 + Math.floor(next() * 2),
    },
  };
}

/** A JSON column's value: the driver parses it on MariaDB (its metadata says JSON), or hands the text. */
const json = (value: unknown): unknown => (typeof value === 'string' ? (JSON.parse(value) as unknown) : value);

/** What a call did: its answer and the rows it left, with the stamp and the times left out. */
interface Outcome {
  granted: boolean;
  locks: unknown[];
  log: unknown[];
  waiters: unknown[];
}

// The twin (`locking_try_acquire_one`) and the second version of the group procedure must decide exactly as the first
// version of `locking_try_acquire` did, and leave the same rows: on random states (lock rows in either mode, permits
// rows, waiters before and after the caller, expired ones) and random requests of one or two locks. A batch
// (`locking_try_acquire_batch`) must decide as the first version called for each of its groups in turn.
describeOnMysql("the procedures' second version decides as the first", () => {
  let db: TestDatabase;
  let connection: mysql.Connection;

  beforeAll(async () => {
    db = await createMysqlTestDatabase();
    connection = await mysql.createConnection({ uri: db.url, supportBigNumbers: true, bigNumberStrings: true });
    // The second version (the third, FairLockWaiters1796700000000, also queues writers: its order is checked by
    // lock-migrations.mysql.spec.ts and fair-waiters.spec.ts), and the first beside it, under a name of its own.
    for (const statement of DROP_MYSQL_LOCK_PROCEDURES_V3) await connection.query(statement);
    const [v1] = CREATE_MYSQL_LOCK_PROCEDURES.filter((sql) => sql.includes('PROCEDURE locking_try_acquire('));
    await connection.query(v1!.replace('PROCEDURE locking_try_acquire(', 'PROCEDURE locking_try_acquire_v1('));
  });
  afterAll(async () => {
    await connection?.end();
    await db?.drop();
  });

  async function setUp(state: State): Promise<void> {
    for (const table of ['locking', 'locking_log', 'locking_permissions', 'locking_waiters']) {
      await connection.query(`DELETE FROM ${table}`);
    }
    for (const row of state.held) {
      await connection.query(`INSERT INTO locking VALUES (?, ?, 'other', ?, UTC_TIMESTAMP(6))`, [row.name, row.mode, row.stamp]);
    }
    for (const row of state.permits) {
      await connection.query('INSERT INTO locking_permissions VALUES (?, ?, ?)', [row.name, row.mode, row.permits]);
    }
    for (const row of state.waiters) {
      await connection.query(
        `INSERT INTO locking_waiters (lock_name, waiter, mode, app_id, expires, seq, registered)
         VALUES (?, ?, ?, 'other', UTC_TIMESTAMP(6) + INTERVAL ? MINUTE, ?, UTC_TIMESTAMP(6))`,
        [row.name, row.waiter, row.mode, row.expired ? -1 : 1, row.seq],
      );
    }
  }

  async function call(procedure: 'v1' | 'v2' | 'one', request: Request): Promise<Outcome> {
    const tail = [60_000, request.waiter, request.write, request.read];
    const [result] =
      procedure === 'one'
        ? await connection.query('CALL locking_try_acquire_one(?, ?, ?, ?, ?, ?, ?, ?)', [
            'app',
            'app:1',
            request.names[0],
            request.modes[0],
            ...tail,
          ])
        : await connection.query(`CALL ${procedure === 'v1' ? 'locking_try_acquire_v1' : 'locking_try_acquire'}(?, ?, ?, ?, ?, ?, ?, ?)`, [
            'app',
            'app:1',
            JSON.stringify(request.names),
            JSON.stringify(request.modes),
            ...tail,
          ]);
    const stamp = Number((result as Array<Array<{ stamp: string }>>)[0]?.[0]?.stamp);
    const [locks] = await connection.query(
      'SELECT lock_name, mode, app_id, stamp = ? AS own FROM locking ORDER BY lock_name, mode, own',
      [stamp],
    );
    const [log] = await connection.query(
      `SELECT stamp = ? AS own, app_id, instance, lock_names, lock_modes, status,
              TIMESTAMPDIFF(SECOND, acquired, lease_expires) AS lease_s FROM locking_log`,
      [stamp],
    );
    const [waiters] = await connection.query('SELECT lock_name, waiter, mode, seq FROM locking_waiters ORDER BY seq');
    return {
      granted: stamp > 0,
      locks: locks as unknown[],
      // JSON arrays compared as values: MariaDB keeps a JSON column's text as written.
      log: (log as Array<Record<string, unknown>>).map((row) => ({
        ...row,
        lock_names: json(row.lock_names),
        lock_modes: json(row.lock_modes),
      })),
      waiters: waiters as unknown[],
    };
  }

  /** Every lock, log and waiter row, with each stamp named by the group of the batch that took it (or `held`). */
  async function rowsBy(stamps: readonly number[]): Promise<unknown> {
    const owner = (stamp: unknown): string => {
      const index = stamps.indexOf(Number(stamp));
      return index >= 0 && Number(stamp) > 0 ? `g${index}` : 'held';
    };
    const [locks] = await connection.query('SELECT lock_name, mode, app_id, stamp FROM locking');
    const [log] = await connection.query('SELECT stamp, lock_names, lock_modes, status FROM locking_log');
    const [waiters] = await connection.query('SELECT lock_name, waiter, mode, seq FROM locking_waiters ORDER BY seq');
    const sorted = (rows: unknown[]): string[] => rows.map((row) => JSON.stringify(row)).sort();
    return {
      locks: sorted((locks as Array<Record<string, unknown>>).map((row) => ({ ...row, stamp: owner(row.stamp) }))),
      log: sorted(
        (log as Array<Record<string, unknown>>).map((row) => ({
          stamp: owner(row.stamp),
          names: json(row.lock_names),
          modes: json(row.lock_modes),
          status: row.status,
        })),
      ),
      waiters,
    };
  }

  it('a batch of groups decides as the same calls one after the other, and leaves the same rows', async () => {
    const next = random(31);
    let granted = 0;
    let refused = 0;
    for (let i = 0; i < 150; i++) {
      const { state } = randomCase(next);
      const requests = Array.from({ length: 2 + Math.floor(next() * 4) }, (_, k) => ({
        ...randomCase(next).request,
        waiter: next() < 0.4 ? `q${k}` : null, // a waiter has one attempt at a time
        write: 1,
        read: 2,
      }));
      // A waiter's rows are its group's locks, as registered (a grant replaces them by lock rows that block as much).
      requests.forEach((request, k) => {
        if (request.waiter === null) return;
        request.names.forEach((name, j) => {
          state.waiters.push({ name, waiter: request.waiter!, mode: request.modes[j]!, seq: 20 + 10 * k + j, expired: false });
        });
      });
      await setUp(state);
      const oneByOne: number[] = [];
      for (const request of requests) {
        const [result] = await connection.query('CALL locking_try_acquire_v1(?, ?, ?, ?, ?, ?, ?, ?)', [
          'app',
          'app:1',
          JSON.stringify(request.names),
          JSON.stringify(request.modes),
          60_000,
          request.waiter,
          1,
          2,
        ]);
        oneByOne.push(Number((result as Array<Array<{ stamp: string }>>)[0]?.[0]?.stamp));
      }
      const expected = { granted: oneByOne.map((stamp) => stamp > 0), rows: await rowsBy(oneByOne) };
      await setUp(state);
      const groups = requests.map((r) => [r.names, r.modes, r.waiter ?? '']);
      const [result] = await connection.query('CALL locking_try_acquire_batch(?, ?, ?, ?, ?, ?)', [
        'app',
        'app:1',
        JSON.stringify(groups),
        60_000,
        1,
        2,
      ]);
      const batched = (JSON.parse(String((result as Array<Array<{ stamps: string }>>)[0]?.[0]?.stamps)) as number[]).map(Number);
      expect({ i, state, requests, granted: batched.map((stamp) => stamp > 0), rows: await rowsBy(batched) }).toEqual({
        i,
        state,
        requests,
        ...expected,
      });
      granted += batched.filter((stamp) => stamp > 0).length;
      refused += batched.filter((stamp) => stamp === 0).length;
    }
    expect(granted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(50);
  });

  it('on 300 random states: the same grant or refusal, the same rows', async () => {
    const next = random(30);
    let granted = 0;
    let refused = 0;
    for (let i = 0; i < 300; i++) {
      const { state, request } = randomCase(next);
      await setUp(state);
      const first = await call('v1', request);
      await setUp(state);
      const second = await call('v2', request);
      expect({ i, state, request, outcome: second }).toEqual({ i, state, request, outcome: first });
      if (request.names.length === 1) {
        await setUp(state);
        const twin = await call('one', request);
        expect({ i, state, request, outcome: twin }).toEqual({ i, state, request, outcome: first });
      }
      if (first.granted) granted++;
      else refused++;
    }
    // Both answers were seen often: the states were varied enough to decide anything.
    expect(granted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(50);
  });
});
