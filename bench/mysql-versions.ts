// The MySQL/MariaDB procedures' versions side by side (issue 30): `npm run build && npm run build:tools && node
// build/bench/mysql-versions.js`. One private MariaDB, three databases: at the procedures' first version (the
// migration before FasterMysqlLockProcedures1796400000000), at the second version without its batch procedure (so each
// grant is one call of the twin or of the group procedure), and at the second version; LockService on each, with
// GET_LOCK and the durable floor, in the same interleaved rounds of W1 and W2 (BENCH_ROUNDS, BENCH_SECONDS as for
// `npm run bench`). On a machine shared with other work only such interleaved comparisons mean anything.
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { getLockContender } from './contenders/get-lock.contender.js';
import { libraryContender } from './contenders/library.contender.js';
import { onMysql } from './contenders/mysql-clients.js';
import { mysqlFloorContender } from './contenders/mysql-floor.contender.js';
import { openMysqlBenchDatabase } from './mysql-database.js';
import { find, formatTable, ratio } from './report.js';
import { runWorkload } from './rounds.js';
import type { Measurement } from './stats.js';
import { W1, W2 } from './workloads.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);

/** A database beside the bench's own, migrated up to the migration before `upTo` (all when undefined). */
async function sibling(url: string, name: string, before: string, drop: readonly string[]): Promise<string> {
  const admin = new URL(url);
  admin.pathname = '/mysql';
  await onMysql(admin.toString(), (c) => c.query(`CREATE DATABASE ${name}`));
  const own = new URL(url);
  own.pathname = `/${name}`;
  const end = LOCK_MIGRATIONS.findIndex((migration) => migration.name === before);
  const migrations = end < 0 ? LOCK_MIGRATIONS : LOCK_MIGRATIONS.slice(0, end);
  const dataSource = new DataSource({ type: 'mariadb', url: own.toString(), migrations: [...migrations] });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
    for (const statement of drop) await dataSource.query(statement);
  } finally {
    await dataSource.destroy();
  }
  return own.toString();
}

async function main(): Promise<void> {
  const database = await openMysqlBenchDatabase();
  if (typeof database === 'string') throw new Error(database);
  const suffix = database.name.replace(/^ndl_bench_/, '');
  const names = [`ndl_v1_${suffix}`, `ndl_nb_${suffix}`];
  try {
    const v1 = await sibling(database.url, names[0]!, 'FasterMysqlLockProcedures1796400000000', []);
    const noBatch = await sibling(database.url, names[1]!, '', ['DROP PROCEDURE locking_try_acquire_batch']);
    const contenders = [
      mysqlFloorContender(database.url),
      getLockContender(database.url, database.name),
      libraryContender(v1, { id: 'library-mysql-v1', name: 'LockService, procedures v1', options: {} }),
      libraryContender(noBatch, { id: 'library-mysql-no-batch', name: 'LockService, v2 without batch', options: {} }),
      libraryContender(database.url, { id: 'library-mysql', name: 'LockService, procedures v2', options: {} }),
    ];
    const plan = { seconds: SECONDS, rounds: ROUNDS, sliceSeconds: SECONDS / ROUNDS, warmupMs: 300, checkpoints: true };
    const measurements: Measurement[] = [];
    for (const workload of [W1, W2]) {
      measurements.push(...(await runWorkload(database, workload, plan, contenders, `versions ${workload.id}`)));
    }
    console.log(formatTable(measurements));
    for (const id of ['library-mysql-v1', 'library-mysql-no-batch', 'library-mysql'] as const) {
      const w1 = ratio('', find(measurements, 'W1', id), find(measurements, 'W1', 'floor-mysql'), 0);
      const w2 = ratio('', find(measurements, 'W2', id), find(measurements, 'W2', 'get-lock'), 0);
      console.log(`${id}: W1 / floor ${w1.value} (${w1.detail}); W2 / GET_LOCK ${w2.value} (${w2.detail})`);
    }
  } finally {
    for (const name of names) {
      await onMysql(database.url, (c) => c.query(`DROP DATABASE IF EXISTS ${name}`)).catch(() => undefined);
    }
    await database.dispose();
  }
}

await main();
