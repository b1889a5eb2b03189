// Where a group's time goes (issue 30: "measurements of where each microsecond goes"): the library's own statements for
// a group of 1 and of 32 write locks, sent from a bare client the way the hot path sends them, each split into the
// time its function runs in the server (measured by the statement itself) and the rest (round trip, commit, the wait
// for the WAL flush on the grant); then the parts of a grant, each run alone in a server-side loop (no round trip, no
// flush), step by step: the rows (k lock rows and the log row, inserted and released as the library does), then the
// check of the names, then their advisory locks.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { BenchDatabase } from './bench-database.js';
import { spreadOf } from './stats.js';

/** The sizes compared, cycles per measurement, and interleaved rounds (the median is kept). */
const SIZES = [1, 32] as const;
const CYCLES = 1500;
const ROUNDS = 5;

/** A column that reads how long the statement has run so far, in µs (statement_timestamp: when it arrived). */
const ELAPSED = '(extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1e6)::float8 AS elapsed';

/** The hot path's statements (postgres-lock.queries.sql.ts), with the elapsed column after the call. */
const ACQUIRE_ONE = `SELECT locking_try_acquire_one($1, $2, $3, $4, NULL, 1, 1, 30000) AS stamp, ${ELAPSED}`;
const ACQUIRE_GROUP = `SELECT (locking_try_acquire($1, $2, $3::text[], $4::text[], ARRAY[cardinality($3::text[])],
  ARRAY[NULL]::text[], 1, 1, 30000))[1] AS stamp, ${ELAPSED}`;
const RELEASE_ONE = `SELECT locking_release_one($1, $2, true) AS released, ${ELAPSED}`;

/** µs of one statement: on the client's clock, and inside the server up to the end of its function. */
interface Timed {
  readonly total: number;
  readonly inside: number;
}

/** Medians over all cycles of every round, per size. */
interface SizeTimes {
  readonly acquire: Timed;
  readonly release: Timed;
}

async function timeStatements(client: pg.Client, size: number): Promise<{ acquire: Timed[]; release: Timed[] }> {
  const names = Array.from({ length: size }, (_, i) => `bench_gb${size}_${i}`);
  const acquire: Timed[] = [];
  const release: Timed[] = [];
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    let started = performance.now();
    const { rows } = await client.query<{ stamp: string; elapsed: number }>(
      size === 1
        ? { name: 'bench_gb_one', text: ACQUIRE_ONE, values: ['bench-gb', 'bench-gb:0', names[0], 'W'] }
        : { name: 'bench_gb_group', text: ACQUIRE_GROUP, values: ['bench-gb', 'bench-gb:0', names, names.map(() => 'W')] },
    );
    acquire.push({ total: (performance.now() - started) * 1000, inside: rows[0]?.elapsed ?? Number.NaN });
    started = performance.now();
    const released = await client.query<{ elapsed: number }>({
      name: 'bench_gb_release',
      text: RELEASE_ONE,
      values: ['bench-gb', rows[0]?.stamp],
    });
    release.push({ total: (performance.now() - started) * 1000, inside: released.rows[0]?.elapsed ?? Number.NaN });
  }
  return { acquire, release };
}

const median = (values: readonly number[]): number => spreadOf(values).median;
const medianOf = (timed: readonly Timed[]): Timed => ({
  total: median(timed.map((t) => t.total)),
  inside: median(timed.map((t) => t.inside)),
});

/**
 * The parts of a grant of `size` names, as PL/pgSQL loop bodies, each adding one step to the previous one (so that
 * each step runs under the churn of the rows, as in the library: the same names granted and released again and
 * again between two vacuums): the rows alone (k lock rows and the log row in, then released as the library does),
 * then the check of the names before the rows, then the advisory locks of the names before the check.
 */
function partLoops(size: number): ReadonlyArray<{ readonly label: string; readonly body: string }> {
  const names = `ARRAY[${Array.from({ length: size }, (_, i) => `'bench_gp${size}_${i}'`).join(', ')}]::text[]`;
  const rows = `s := nextval('locking_stamp_seq');
        INSERT INTO locking (lock_name, mode, app_id, stamp) SELECT n, 'W', 'bench-gp', s FROM unnest(${names}) AS n;
        INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
          VALUES (s, 'bench-gp', 'bench-gp', ${names}, array_fill('W'::char(1), ARRAY[${size}]), 'ACQUIRED',
                  now() + interval '30 seconds');
        COMMIT;
        PERFORM bench_rows_release_async(s, true); COMMIT;`;
  const check = `PERFORM 1 FROM unnest(${names}) AS r(name) WHERE EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = r.name);`;
  const advisory = `PERFORM pg_advisory_xact_lock(1, k) FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(${names}) AS n ORDER BY 1) AS keys;`;
  return [
    { label: 'the rows: lock rows + log row in, released', body: rows },
    { label: '+ the check of the names (is any held?)', body: `${check} ${rows}` },
    { label: '+ their advisory locks', body: `${advisory} ${check} ${rows}` },
  ];
}

/** µs per cycle of each part, per size: the median of `ROUNDS` server-side loops (synchronous_commit off). */
async function timeParts(database: BenchDatabase, client: pg.Client): Promise<Map<string, number[]>> {
  const times = new Map<string, number[][]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const size of SIZES) {
      for (const part of partLoops(size)) {
        await database.vacuum();
        const started = performance.now();
        await client.query(`DO $$ DECLARE s bigint; BEGIN FOR i IN 1..${CYCLES} LOOP ${part.body} END LOOP; END $$`);
        const perSize = times.get(part.label) ?? SIZES.map((): number[] => []);
        perSize[SIZES.indexOf(size)]?.push(((performance.now() - started) * 1000) / CYCLES);
        times.set(part.label, perSize);
      }
    }
  }
  return new Map([...times].map(([label, perSize]) => [label, perSize.map(median)]));
}

/** The table: each size's statements split, then the parts alone, with the difference a group of 32 makes. */
export async function measureGroupBreakdown(database: BenchDatabase): Promise<string[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const rounds = SIZES.map(() => ({ acquire: [] as Timed[], release: [] as Timed[] }));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, size] of SIZES.entries()) {
        await database.vacuum();
        const measured = await timeStatements(client, size);
        rounds[index]?.acquire.push(...measured.acquire);
        rounds[index]?.release.push(...measured.release);
      }
    }
    const sizes: SizeTimes[] = rounds.map((r) => ({ acquire: medianOf(r.acquire), release: medianOf(r.release) }));
    await client.query('SET synchronous_commit = off');
    const parts = await timeParts(database, client);
    const cell = (value: number | undefined): string =>
      (value !== undefined && Number.isFinite(value) ? value.toFixed(0) : 'n/a').padStart(8);
    const row = (label: string, values: ReadonlyArray<number | undefined>): string =>
      `| ${label.padEnd(60)} | ${values.map(cell).join(' | ')} | ${cell((values[1] ?? Number.NaN) - (values[0] ?? Number.NaN))} |`;
    const [one, group] = sizes;
    return [
      `Where a group's time goes (µs, medians; statements from a bare client as the hot path sends them, ${ROUNDS} ` +
        `rounds of ${CYCLES} cycles; parts: server-side loops, synchronous_commit off):`,
      '',
      `| ${'step'.padEnd(60)} | ${'1 lock'.padStart(8)} | ${'32 locks'.padStart(8)} | ${'+'.padStart(8)} |`,
      `|${'-'.repeat(62)}|${'-'.repeat(9)}:|${'-'.repeat(9)}:|${'-'.repeat(9)}:|`,
      row('grant: the function, in the server', [one?.acquire.inside, group?.acquire.inside]),
      row('grant: round trip, commit, WAL flush', [
        (one?.acquire.total ?? Number.NaN) - (one?.acquire.inside ?? Number.NaN),
        (group?.acquire.total ?? Number.NaN) - (group?.acquire.inside ?? Number.NaN),
      ]),
      row('release: the function, in the server', [one?.release.inside, group?.release.inside]),
      row('release: round trip, commit (asynchronous)', [
        (one?.release.total ?? Number.NaN) - (one?.release.inside ?? Number.NaN),
        (group?.release.total ?? Number.NaN) - (group?.release.inside ?? Number.NaN),
      ]),
      row('= acquire + release from a bare client', [
        (one?.acquire.total ?? Number.NaN) + (one?.release.total ?? Number.NaN),
        (group?.acquire.total ?? Number.NaN) + (group?.release.total ?? Number.NaN),
      ]),
      ...[...parts].map(([label, values]) => row(`server loop: ${label}`, values)),
    ];
  } finally {
    await client.end();
  }
}
