import type pg from 'pg';
import type { BenchGroup } from '../workloads.js';
import type { Contender, ContenderClient, ContenderSession } from './contender.js';
import { openClientSession } from './pg-clients.js';

/** Tries every lock of the group in one statement: exclusive for write, shared for read (session level). */
const TRY_GROUP = {
  name: 'bench_advisory_try',
  text: `SELECT CASE WHEN t.m = 'W' THEN pg_try_advisory_lock(t.k) ELSE pg_try_advisory_lock_shared(t.k) END AS ok
         FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS t(k, m, i) ORDER BY t.i`,
};

/** Unlocks, in one statement, what was taken. */
const UNLOCK_GROUP = {
  name: 'bench_advisory_unlock',
  text: `SELECT CASE WHEN t.m = 'W' THEN pg_advisory_unlock(t.k) ELSE pg_advisory_unlock_shared(t.k) END AS ok
         FROM unnest($1::bigint[], $2::text[]) AS t(k, m)`,
};

/** Advisory keys of this benchmark: far from anything else, one per name. */
const KEY_BASE = 7_000_000_000;

/** PostgreSQL session-level advisory locks: the speed reference (no rows, no WAL, no durability). */
export function advisoryContender(url: string): Contender {
  return {
    id: 'advisory',
    name: 'pg advisory locks',
    open(workload): Promise<ContenderSession> {
      const keys = new Map(workload.names.map((name, index) => [name, KEY_BASE + index]));
      return openClientSession(url, workload.clients, (connection) => advisoryClient(connection, keys));
    },
  };
}

function advisoryClient(connection: pg.Client, keys: ReadonlyMap<string, number>): ContenderClient {
  const unlock = async (group: BenchGroup): Promise<void> => {
    await connection.query({
      ...UNLOCK_GROUP,
      values: [group.map((lock) => keyOf(keys, lock.name)), group.map((lock) => (lock.mode === 'write' ? 'W' : 'R'))],
    });
  };
  return {
    async attempt(group) {
      const result = await connection.query<{ ok: boolean }>({
        ...TRY_GROUP,
        values: [group.map((lock) => keyOf(keys, lock.name)), group.map((lock) => (lock.mode === 'write' ? 'W' : 'R'))],
      });
      const taken = group.filter((_, index) => result.rows[index]?.ok === true);
      if (taken.length > 0) await unlock(taken);
      return taken.length === group.length;
    },
  };
}

function keyOf(keys: ReadonlyMap<string, number>, name: string): number {
  const key = keys.get(name);
  if (key === undefined) throw new Error(`no advisory key for ${name}`);
  return key;
}
