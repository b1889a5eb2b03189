// `npm run build && tsc -p tsconfig.tools.json && node build/bench/w1-release-probe.js`: what the doorbells cost an
// uncontended cycle on MariaDB (issue 30). W1 (one client, acquire + release of one lock) with the same build of the
// library on two databases of one private server: one at the previous migration (the first `locking_release`, no
// doorbell probe) and one at the latest (the release also probes the waiters of the names it freed). Interleaved
// rounds (BENCH_ROUNDS, default 10; BENCH_SECONDS per side and round, default 2), the order alternating.
import { LOCK_MIGRATIONS, LockService } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { bootApplication } from './contenders/library.contender.js';
import { openMysqlBenchDatabase } from './mysql-database.js';

async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 10);
  const seconds = Number(process.env.BENCH_SECONDS ?? 2);
  const database = await openMysqlBenchDatabase();
  if (typeof database === 'string') throw new Error(database);
  const previousName = `${database.name}_prev`;
  const previousUrl = database.url.replace(new RegExp(`/${database.name}(\\?|$)`), `/${previousName}$1`);
  try {
    await database.query(`CREATE DATABASE ${previousName}`);
    const source = new DataSource({ type: 'mariadb', url: previousUrl, migrations: LOCK_MIGRATIONS.slice(0, -1) });
    await source.initialize();
    await source.runMigrations();
    await source.destroy();
    const sides = [
      { label: 'previous migration (no doorbell probe)', app: await bootApplication(previousUrl, 'probe-prev') },
      { label: 'latest migration (doorbell probe)', app: await bootApplication(database.url, 'probe-latest') },
    ];
    const rates: number[][] = [[], []];
    for (let round = 0; round < rounds; round++) {
      for (const index of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const locks = sides[index]!.app.get(LockService);
        let cycles = 0;
        const end = performance.now() + seconds * 1000;
        while (performance.now() < end) {
          await locks.releaseLocks(await locks.tryLocks(['W1_PROBE_WRITE']));
          cycles++;
        }
        rates[index]!.push(cycles / seconds);
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const ratios = rates[1]!.map((rate, i) => rate / rates[0]![i]!);
    for (const [i, side] of sides.entries()) {
      console.log(`${side.label}: median ${median(rates[i]!).toFixed(0)} cycles/s, rounds ${rates[i]!.map((r) => r.toFixed(0)).join(' ')}`);
    }
    console.log(`latest / previous: median of per-round ratios ${median(ratios).toFixed(3)} (${ratios.map((r) => r.toFixed(3)).join(' ')})`);
    for (const side of sides) await side.app.close();
  } finally {
    await database.query(`DROP DATABASE IF EXISTS ${previousName}`).catch(() => undefined);
    await database.dispose();
  }
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
