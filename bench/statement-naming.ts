// What going unnamed costs (issue 28): behind a transaction pooler the library sends its hot-path statements unnamed
// (parsed and planned again each time); on a direct connection it keeps them as named prepared statements. This small
// case measures one client doing uncontended acquire + release cycles with the library's own statements
// (TRY_ACQUIRE_ONE, RELEASE_ONE), named against unnamed, in short alternating blocks (so that the load of a shared
// machine falls on both alike), and reports the median µs per cycle of each and of their difference per block pair.
// Run alone (it starts its own embedded PostgreSQL, or uses DATABASE_URL):
//   npm run bench:naming
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { RELEASE_ONE, TRY_ACQUIRE_ONE } from '../lib/store/postgres/postgres-lock.queries.sql.js';
import { openBenchDatabase } from './bench-database.js';

/** Cycles per block, and block pairs (named, unnamed; the order alternates). */
const CYCLES = Number(process.env.NAMING_CYCLES ?? 50);
const ROUNDS = Number(process.env.NAMING_ROUNDS ?? 80);

/**
 * µs per acquire + release over `CYCLES` cycles on `client`, named or not; `rolledBack` runs each cycle in a
 * transaction that is rolled back (the same BEGIN and ROLLBACK for both): no commit waits for the disk, so what is left
 * is mostly the statements' own processing, where naming makes its difference.
 */
async function cycles(client: pg.Client, named: boolean, tag: string, rolledBack: boolean): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < CYCLES; i++) {
    if (rolledBack) await client.query('BEGIN');
    const acquired = await client.query<{ stamp: string }>({
      ...(named ? { name: 'bench_naming_try_acquire_one' } : {}),
      text: TRY_ACQUIRE_ONE,
      values: ['bench_naming', 'bench_naming:0', `naming_${tag}`, 'W', null, 1, 1, 30_000],
    });
    await client.query({
      ...(named ? { name: 'bench_naming_release_one' } : {}),
      text: RELEASE_ONE,
      values: ['bench_naming', acquired.rows[0]?.stamp, true],
    });
    if (rolledBack) await client.query('ROLLBACK');
  }
  return ((performance.now() - started) * 1000) / CYCLES;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function main(): Promise<void> {
  const database = await openBenchDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    for (const rolledBack of [false, true]) {
      await cycles(client, true, 'warm', rolledBack);
      await cycles(client, false, 'warm', rolledBack);
      const named: number[] = [];
      const unnamed: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        if (round % 20 === 0) await database.vacuum();
        // Alternate which goes first, so that neither always inherits the other's dead rows or cache.
        if (round % 2 === 0) {
          named.push(await cycles(client, true, 'n', rolledBack));
          unnamed.push(await cycles(client, false, 'u', rolledBack));
        } else {
          unnamed.push(await cycles(client, false, 'u', rolledBack));
          named.push(await cycles(client, true, 'n', rolledBack));
        }
      }
      const n = median(named);
      const u = median(unnamed);
      const d = median(unnamed.map((value, k) => value - (named[k] ?? Number.NaN)));
      const f = (x: number) => x.toFixed(1);
      process.stdout.write(
        `${rolledBack ? 'statements only (each cycle rolled back)' : 'as the library runs (durable acquisition)'}: ` +
          `${ROUNDS} block pairs of ${CYCLES} uncontended acquire + release cycles, one client, ${database.source}\n` +
          `  named prepared statements: median ${f(n)} µs per cycle\n` +
          `  unnamed statements:        median ${f(u)} µs per cycle\n` +
          `  unnamed costs ${f(d)} µs (${f((d / n) * 100)} %) per acquire + release (median of the pairs' differences)\n`,
      );
    }
  } finally {
    await client.end();
    await database.dispose();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
