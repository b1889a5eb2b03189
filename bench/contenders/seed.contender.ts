import type pg from 'pg';
import type { BenchGroup, Workload } from '../workloads.js';
import type { Contender, ContenderClient, ContenderSession } from './contender.js';
import { openClientSession, sqlState } from './pg-clients.js';

const APP_ID = 'bench-seed';
const RETRYABLE = new Set(['40001', '40P01']);

const SELECT_HELD = {
  name: 'bench_seed_select',
  text: 'SELECT lock_name, mode FROM seed_locking WHERE lock_name = ANY($1::text[])',
};
const INSERT_GROUP = {
  name: 'bench_seed_insert',
  text: `WITH s AS (SELECT nextval('seed_locking_stamp_seq') AS stamp)
         INSERT INTO seed_locking (lock_name, mode, app_id, stamp)
         SELECT r.name, r.mode, $3, s.stamp FROM unnest($1::text[], $2::text[]) AS r(name, mode), s
         RETURNING stamp`,
};
const RELEASE_GROUP = { name: 'bench_seed_release', text: 'DELETE FROM seed_locking WHERE app_id = $1 AND stamp = $2' };

/**
 * Seed 000's algorithm as written: BEGIN SERIALIZABLE; read the rows of the group's names; check the permits in the
 * application; insert the rows under a stamp from a sequence; COMMIT; retry the whole transaction on a serialization
 * failure or deadlock. Release is an autocommitted DELETE by (app_id, stamp).
 */
export function seedContender(url: string): Contender {
  return {
    id: 'seed',
    name: 'seed algorithm (SERIALIZABLE)',
    open(workload): Promise<ContenderSession> {
      const counter = { retries: 0 };
      return openClientSession(
        url,
        workload.clients,
        (connection) => seedClient(connection, workload, counter),
        () => counter.retries,
      );
    },
  };
}

function seedClient(connection: pg.Client, workload: Workload, counter: { retries: number }): ContenderClient {
  const acquire = async (group: BenchGroup): Promise<string | null> => {
    for (;;) {
      try {
        await connection.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
        const held = await connection.query<{ lock_name: string; mode: string }>({
          ...SELECT_HELD,
          values: [group.map((lock) => lock.name)],
        });
        if (!permitted(group, held.rows, workload.readPermits)) {
          await connection.query('ROLLBACK');
          return null;
        }
        const inserted = await connection.query<{ stamp: string }>({
          ...INSERT_GROUP,
          values: [group.map((lock) => lock.name), group.map((lock) => (lock.mode === 'write' ? 'W' : 'R')), APP_ID],
        });
        await connection.query('COMMIT');
        return inserted.rows[0]?.stamp ?? null;
      } catch (error) {
        await connection.query('ROLLBACK').catch(() => undefined);
        if (!RETRYABLE.has(sqlState(error) ?? '')) throw error;
        counter.retries++;
      }
    }
  };
  return {
    async attempt(group) {
      const stamp = await acquire(group);
      if (stamp === null) return false;
      await connection.query({ ...RELEASE_GROUP, values: [APP_ID, stamp] });
      return true;
    },
  };
}

/** The seed's permits rules, checked in the application. Write permits are 1 for every name. */
function permitted(group: BenchGroup, held: readonly { lock_name: string; mode: string }[], readPermits: number): boolean {
  return group.every((lock) => {
    const reads = held.filter((row) => row.lock_name === lock.name && row.mode === 'R').length;
    const writes = held.filter((row) => row.lock_name === lock.name && row.mode === 'W').length;
    return lock.mode === 'write' ? reads === 0 && writes + 1 <= 1 : writes === 0 && reads + 1 <= readPermits;
  });
}
