import pg from 'pg';
import { connectClient, createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** Sequential scans of `locking` and `locking_log` so far in the session's open transaction. */
async function seqScans(client: pg.Client): Promise<{ locking: number; log: number }> {
  const { rows } = await client.query<{ locking: string; log: string }>(
    `SELECT pg_stat_get_xact_numscans('locking'::regclass) AS locking,
            pg_stat_get_xact_numscans('locking_log'::regclass) AS log`,
  );
  return { locking: Number(rows[0]?.locking), log: Number(rows[0]?.log) };
}

describe('engine functions plan index scans', () => {
  let db: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connectClient(db.url);
  });

  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  // Statistics of empty tables (a fresh install, or an ANALYZE right after a prune) make sequential scans look free;
  // on tables that churn, they read every dead row at every call until the next ANALYZE.
  it('never scans locking or locking_log sequentially, even when their statistics say they are empty', async () => {
    await client.query('VACUUM ANALYZE locking, locking_log');
    await client.query('BEGIN');
    try {
      // More calls than PostgreSQL's five custom plans, so that the cached generic plans are used as well.
      for (let i = 0; i < 8; i++) {
        const names = i % 2 === 0 ? ['P1'] : ['P1', 'P2'];
        const modes = i % 2 === 0 ? ['W'] : ['R', 'R'];
        const { rows } = await client.query<{ stamps: string[] }>(
          `SELECT locking_try_acquire('plans', 'plans-1', $1::text[], $2::text[], ARRAY[$3::integer], ARRAY[NULL]::text[],
             1, 1, 60000) AS stamps`,
          [names, modes, names.length],
        );
        const stamp = Number(rows[0]?.stamps[0]);
        expect(stamp).toBeGreaterThan(0);
        // A held name takes the permits path of the check.
        const { rows: busy } = await client.query<{ stamps: string[] }>(
          `SELECT locking_try_acquire('plans', 'plans-1', ARRAY['P1'], ARRAY['W'], ARRAY[1], ARRAY[NULL]::text[], 1, 1,
             60000) AS stamps`,
        );
        expect(busy[0]?.stamps).toEqual(['0']);
        // And a group of several names, one of them held: the group's one-statement check.
        const { rows: busyGroup } = await client.query<{ stamps: string[] }>(
          `SELECT locking_try_acquire('plans', 'plans-1', ARRAY['P3', 'P1'], ARRAY['R', 'W'], ARRAY[2],
             ARRAY[NULL]::text[], 1, 1, 60000) AS stamps`,
        );
        expect(busyGroup[0]?.stamps).toEqual(['0']);
        const { rows: released } = await client.query<{ released: string[] }>(
          `SELECT locking_release('plans', ARRAY[$1::bigint], false) AS released`,
          [stamp],
        );
        expect(released[0]?.released).toEqual([String(stamp)]);
      }
      expect(await seqScans(client)).toEqual({ locking: 0, log: 0 });
    } finally {
      await client.query('ROLLBACK');
    }
  });

  // A hashed subplan read the whole of `locking` at every group grant (GroupCheckProbes1797100000000): every lock the
  // fleet holds, and every row released since the last VACUUM (a bitmap scan never marks an index entry dead).
  it("checks a group by probing its own names, never reading the other names' lock rows", async () => {
    const entriesRead = async (): Promise<number> => {
      const { rows } = await client.query<{ read: string }>(
        `SELECT pg_stat_get_xact_tuples_returned('locking_pk'::regclass) AS read`,
      );
      return Number(rows[0]?.read);
    };
    await client.query('VACUUM ANALYZE locking');
    await client.query('BEGIN');
    try {
      // Two thousand locks held by another app: what a fleet holds at once.
      await client.query(
        `INSERT INTO locking (lock_name, mode, app_id, stamp)
           SELECT 'OTHER_' || g, 'W', 'others', nextval('locking_stamp_seq') FROM generate_series(1, 2000) AS g`,
      );
      const before = await entriesRead();
      for (let i = 0; i < 8; i++) {
        const names = [`PROBE_A${i}`, `PROBE_B${i}`, `PROBE_C${i}`, `PROBE_D${i}`];
        const { rows } = await client.query<{ stamps: string[] }>(
          `SELECT locking_try_acquire('plans', 'plans-1', $1::text[], ARRAY['W', 'W', 'R', 'R'], ARRAY[4],
             ARRAY[NULL]::text[], 1, 1, 60000) AS stamps`,
          [names],
        );
        expect(Number(rows[0]?.stamps[0])).toBeGreaterThan(0);
      }
      // Four probes per call find nothing; the uniqueness checks of the inserts read no other name's entry either.
      expect((await entriesRead()) - before).toBeLessThan(100);
    } finally {
      await client.query('ROLLBACK');
    }
  });

  // Left to choose, PL/pgSQL plans the group check again at every call (its generic plan never looks cheaper than
  // the custom ones): about 0.4 ms of planning per call, half the contended workload's throughput in the benchmark.
  it('plans a call with several names generically, and leaves a call with one name as it is', async () => {
    const planCacheMode = async (): Promise<string> => {
      const { rows } = await client.query<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`);
      return rows[0]?.mode ?? '';
    };
    await client.query('BEGIN');
    try {
      await client.query(
        `SELECT locking_try_acquire('plans', 'plans-1', ARRAY['G1'], ARRAY['W'], ARRAY[1], ARRAY[NULL]::text[], 1, 1, 60000)`,
      );
      expect(await planCacheMode()).toBe('auto');
      await client.query(
        `SELECT locking_try_acquire('plans', 'plans-1', ARRAY['G2', 'G3'], ARRAY['W', 'R'], ARRAY[2], ARRAY[NULL]::text[],
           1, 1, 60000)`,
      );
      expect(await planCacheMode()).toBe('force_generic_plan');
    } finally {
      await client.query('ROLLBACK');
    }
    // The setting is the transaction's own: the next statement of the session plans as it chooses.
    expect(await planCacheMode()).toBe('auto');
  });
});
