// The server's own share of W1 (issue 14: "measure where each microsecond goes"): each breakdown contender's
// statements run in a loop inside the server (a DO block that commits after every statement, with
// synchronous_commit off), so no round trip, no client and no wait for the disk is counted. Set against the same
// contenders' W1 time, the rest is what happens outside the server: round trips, the client, and the WAL flush.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { BenchDatabase } from './bench-database.js';
import type { ContenderId } from './contenders/contender.js';
import { type Measurement, spreadOf } from './stats.js';
import { microseconds } from './w1-breakdown.js';

/** Acquire + release cycles per loop, and interleaved rounds (the median is kept). */
const CYCLES = 4000;
const ROUNDS = 7;

/** One contender's acquire + release as PL/pgSQL statements; `s` holds the stamp, `i` the cycle. */
interface ServerLoop {
  readonly id: ContenderId;
  readonly label: string;
  readonly body: string;
}

const LOOPS: readonly ServerLoop[] = [
  {
    id: 'floor-async',
    label: 'durable floor: INSERT, DELETE',
    body: `INSERT INTO bench_floor (id, app_id) VALUES (-i, 'bench_srv'); COMMIT;
           DELETE FROM bench_floor WHERE id = -i; COMMIT;`,
  },
  {
    id: 'rows-lock',
    label: 'bare SQL: lock row',
    body: `INSERT INTO locking (lock_name, mode, app_id, stamp)
             VALUES ('bench_srv_lock', 'W', 'bench_srv', nextval('locking_stamp_seq')) RETURNING stamp INTO s; COMMIT;
           PERFORM bench_rows_release_async(s, false); COMMIT;`,
  },
  {
    id: 'rows-lock-log',
    label: 'bare SQL: lock row + log row',
    body: `WITH n AS (SELECT nextval('locking_stamp_seq') AS stamp),
                l AS (INSERT INTO locking (lock_name, mode, app_id, stamp) SELECT 'bench_srv_log', 'W', 'bench_srv', stamp FROM n)
           INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
             SELECT stamp, 'bench_srv', 'bench_srv', ARRAY['bench_srv_log'], ARRAY['W']::char(1)[], 'ACQUIRED',
                    now() + interval '30 seconds' FROM n
             RETURNING stamp INTO s; COMMIT;
           PERFORM bench_rows_release_async(s, true); COMMIT;`,
  },
  {
    id: 'library',
    label: "the library's functions (try_acquire_one, release_one)",
    body: `s := locking_try_acquire_one('bench_srv', 'bench_srv:0', 'bench_srv_lib', 'W', NULL, 1, 1, 30000); COMMIT;
           PERFORM locking_release_one('bench_srv', s, true); COMMIT;`,
  },
];

/** Per acquire + release of a loop: server µs and WAL bytes, each the median of `ROUNDS` interleaved rounds. */
interface ServerCost {
  readonly microseconds: number;
  readonly walBytes: number;
}

async function measureServerLoops(database: BenchDatabase): Promise<Map<ContenderId, ServerCost>> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query('SET synchronous_commit = off');
    const times = new Map<ContenderId, number[]>(LOOPS.map((loop) => [loop.id, []]));
    const wal = new Map<ContenderId, number[]>(LOOPS.map((loop) => [loop.id, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < LOOPS.length; k++) {
        const loop = LOOPS[(round + k) % LOOPS.length];
        if (!loop) continue;
        await database.vacuum();
        const { rows } = await client.query<{ lsn: string }>('SELECT pg_current_wal_lsn() AS lsn');
        const started = performance.now();
        await client.query(`DO $$ DECLARE s bigint; BEGIN FOR i IN 1..${CYCLES} LOOP ${loop.body} END LOOP; END $$`);
        times.get(loop.id)?.push(((performance.now() - started) * 1000) / CYCLES);
        const written = await client.query<{ bytes: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS bytes', [
          rows[0]?.lsn,
        ]);
        wal.get(loop.id)?.push(Number(written.rows[0]?.bytes) / CYCLES);
      }
    }
    const median = (values: number[] | undefined): number => spreadOf(values ?? []).median;
    return new Map(
      LOOPS.map(({ id }) => [id, { microseconds: median(times.get(id)), walBytes: median(wal.get(id)) }]),
    );
  } finally {
    await client.end();
  }
}

/** The server-time table, set against the W1 breakdown's `measurements` (time per acquire + release). */
export async function measureServerTime(database: BenchDatabase, measurements: readonly Measurement[]): Promise<string[]> {
  const server = await measureServerLoops(database);
  const wall = (id: ContenderId): number => microseconds(measurements.find((m) => m.contenderId === id));
  const cell = (value: number): string => (Number.isFinite(value) ? value.toFixed(0) : 'n/a').padStart(9);
  return [
    `Inside the server and outside it (µs per acquire + release; server: the statements in a server-side loop, ` +
      `${CYCLES} cycles, median of ${ROUNDS} rounds; W1: the table above):`,
    '',
    `| ${'contender'.padEnd(54)} | ${'server'.padStart(9)} | ${'WAL bytes'.padStart(9)} | ${'W1'.padStart(9)} | ${'outside'.padStart(9)} |`,
    `|${'-'.repeat(56)}|${'-'.repeat(10)}:|${'-'.repeat(10)}:|${'-'.repeat(10)}:|${'-'.repeat(10)}:|`,
    ...LOOPS.map((loop) => {
      const cost = server.get(loop.id);
      const inside = cost?.microseconds ?? Number.NaN;
      return (
        `| ${loop.label.padEnd(54)} | ${cell(inside)} | ${cell(cost?.walBytes ?? Number.NaN)} | ${cell(wall(loop.id))} | ` +
        `${cell(wall(loop.id) - inside)} |`
      );
    }),
    '',
    'Outside: the round trips, the client (pg; for the library also Nest and the library), and the wait for the WAL flush.',
  ];
}
