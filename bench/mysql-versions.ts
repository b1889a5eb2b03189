// The MySQL/MariaDB procedures' versions side by side (issues 30 and 41): `npm run build && npm run build:tools && node
// build/bench/mysql-versions.js`. One private MariaDB, four databases: at the procedures' first version (the
// migration before FasterMysqlLockProcedures1796400000000), at the latest version without its batch procedure (so each
// grant is one call of the twin or of the group procedure), at the migration before MysqlQuietRelease1797000000000
// (every release answers a result set), and at the latest; LockService on each, with GET_LOCK and the durable floor,
// in the same interleaved rounds of W1 and W2 (BENCH_ROUNDS, BENCH_SECONDS as for `npm run bench`; BENCH_WORKLOADS,
// default `W1,W2`; BENCH_VERSIONS=recent leaves out the first version and the one without batch). On a machine shared
// with other work only such interleaved comparisons mean anything.
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
  const recent = process.env.BENCH_VERSIONS === 'recent';
  const names = [`ndl_db_${suffix}`, ...(recent ? [] : [`ndl_v1_${suffix}`, `ndl_nb_${suffix}`])];
  try {
    const doorbellRelease = await sibling(database.url, names[0]!, 'MysqlQuietRelease1797000000000', []);
    const older = recent
      ? []
      : [
          libraryContender(await sibling(database.url, names[1]!, 'FasterMysqlLockProcedures1796400000000', []), {
            id: 'library-mysql-v1',
            name: 'LockService, procedures v1',
            options: {},
          }),
          libraryContender(await sibling(database.url, names[2]!, '', ['DROP PROCEDURE locking_try_acquire_batch']), {
            id: 'library-mysql-no-batch',
            name: 'LockService, latest without batch',
            options: {},
          }),
        ];
    const contenders = [
      mysqlFloorContender(database.url),
      getLockContender(database.url, database.name),
      ...older,
      libraryContender(doorbellRelease, {
        id: 'library-mysql-doorbell-release',
        name: 'LockService, release with result set',
        options: {},
      }),
      libraryContender(database.url, { id: 'library-mysql', name: 'LockService, latest (quiet release)', options: {} }),
    ];
    const plan = { seconds: SECONDS, rounds: ROUNDS, sliceSeconds: SECONDS / ROUNDS, warmupMs: 300, checkpoints: true };
    const workloads = (process.env.BENCH_WORKLOADS ?? 'W1,W2').split(',');
    const measurements: Measurement[] = [];
    for (const workload of [W1, W2].filter((w) => workloads.includes(w.id))) {
      measurements.push(...(await runWorkload(database, workload, plan, contenders, `versions ${workload.id}`)));
    }
    console.log(formatTable(measurements));
    for (const { id } of contenders.slice(2)) {
      const w1 = ratio('', find(measurements, 'W1', id), find(measurements, 'W1', 'floor-mysql'), 0);
      const w2 = ratio('', find(measurements, 'W2', id), find(measurements, 'W2', 'get-lock'), 0);
      console.log(`${id}: W1 / floor ${w1.value} (${w1.detail}); W2 / GET_LOCK ${w2.value} (${w2.detail})`);
    }
    const quiet = ratio('', find(measurements, 'W1', 'library-mysql'), find(measurements, 'W1', 'library-mysql-doorbell-release'), 0);
    console.log(`W1 quiet release / release with result set: ${quiet.value} (${quiet.detail})`);
  } finally {
    for (const name of names) {
      await onMysql(database.url, (c) => c.query(`DROP DATABASE IF EXISTS ${name}`)).catch(() => undefined);
    }
    await database.dispose();
  }
}

await main();
