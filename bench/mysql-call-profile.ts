// Where a MariaDB W1 cycle's time goes (issue 30): `npm run build && npm run build:tools && node
// build/bench/mysql-call-profile.js`. On a private MariaDB started with the performance schema (its consumers off
// while timing), W1 cycles (acquire + release of one write lock, one client) in interleaved rounds for: the durable
// floor, GET_LOCK, the procedures called from a bare mysql2 connection (text protocol and prepared statements), and
// LockService; first on a database at the procedures' first version, then after the second version's migration.
// Then each call's statements from the performance schema (events_statements_history_long): the server's time per
// CALL and per statement inside it. PROFILE_ROUNDS (5), PROFILE_SLICE_MS (1000), PROFILE_CYCLES (400) shorten it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LOCK_MIGRATIONS, LockService } from 'nestjs-db-locks';
import type mysql from 'mysql2/promise';
import { DataSource } from 'typeorm';
import { startPrivateMariadb } from '../test/support/mariadb-server.mjs';
import { bootApplication } from './contenders/library.contender.js';
import { connectMysql, onMysql } from './contenders/mysql-clients.js';

const ROUNDS = Number(process.env.PROFILE_ROUNDS ?? 5);
const SLICE_MS = Number(process.env.PROFILE_SLICE_MS ?? 1000);
const CYCLES = Number(process.env.PROFILE_CYCLES ?? 400);

/** One acquire + release, and what closes its session. */
interface Runner {
  cycle(): Promise<void>;
  close(): Promise<void>;
}

/** A way to run W1 cycles. */
interface Variant {
  readonly label: string;
  open(url: string): Promise<Runner>;
}

type Send = (connection: mysql.Connection, sql: string, values: unknown[]) => Promise<unknown>;
const byQuery: Send = (c, sql, values) => c.query(sql, values);
const byExecute: Send = (c, sql, values) => c.execute(sql, values as Parameters<mysql.Connection['execute']>[1]);

/** A bare mysql2 connection running `cycle`. */
const bare = (label: string, cycle: (c: mysql.Connection, i: number) => Promise<void>): Variant => ({
  label,
  async open(url) {
    const connection = await connectMysql(url);
    let i = 0;
    return { cycle: () => cycle(connection, ++i), close: () => connection.end() };
  },
});

/** The stamp in the first result set of a CALL. */
const stampOf = (result: unknown): unknown => ((result as [Array<Array<{ stamp: unknown }>>])[0]?.[0]?.[0]?.stamp);

const FLOOR = bare('durable floor: INSERT, DELETE (autocommit)', async (c, i) => {
  await c.query('INSERT INTO bench_floor (id, app_id) VALUES (?, ?)', [i, 'bench']);
  await c.query('DELETE FROM bench_floor WHERE id = ?', [i]);
});

const GET_LOCK = bare('GET_LOCK, RELEASE_LOCK', async (c) => {
  await c.query('SELECT GET_LOCK(?, 0)', ['profile_w1']);
  await c.query('SELECT RELEASE_LOCK(?)', ['profile_w1']);
});

/**
 * A W1 cycle as two bare `CALL`s: the grant by `procedure` (the group procedure takes the name and mode as JSON
 * arrays, the one-lock twin as plain values), then the release.
 */
const procedureCall =
  (procedure: 'locking_try_acquire' | 'locking_try_acquire_one') =>
  (send: Send, label: string): Variant =>
    bare(label, async (c) => {
      const [name, mode] = procedure === 'locking_try_acquire' ? ['["profile_w1"]', '["W"]'] : ['profile_w1', 'W'];
      const called = await send(c, `CALL ${procedure}(?, ?, ?, ?, ?, ?, ?, ?)`, [
        'profile',
        'profile:1',
        name,
        mode,
        30000,
        null,
        1,
        1,
      ]);
      await send(c, 'CALL locking_release(?, ?)', [stampOf(called), 'profile']);
    });

const groupCall = procedureCall('locking_try_acquire');
const twinCall = procedureCall('locking_try_acquire_one');

const LIBRARY: Variant = {
  label: 'LockService (Nest, mysql DataSource)',
  async open(url) {
    const app = await bootApplication(url, 'profile-lib');
    const locks = app.get(LockService);
    return {
      async cycle() {
        const stamp = await locks.tryLocks([{ name: 'profile_lib', mode: 'write' }]);
        if (stamp === 0) throw new Error('W1 lock refused');
        await locks.releaseLocks(stamp);
      },
      close: () => app.close(),
    };
  },
};

/**
 * Per cycle of a variant: wall µs, the server's CPU µs, this process's CPU µs, log fsyncs (MariaDB 10.11 counts none:
 * it writes its redo log through, so not printed), redo bytes.
 */
interface CycleCost {
  wall: number;
  serverCpu: number;
  clientCpu: number;
  fsyncs: number;
  redo: number;
}

/** CPU time of process `pid` so far, in µs (user + system, from /proc). */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/** InnoDB's counters of log fsyncs and redo bytes written. */
async function innodbCounters(url: string): Promise<{ fsyncs: number; redo: number }> {
  const [rows] = await onMysql(url, (c) =>
    c.query<mysql.RowDataPacket[]>(
      "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_os_log_fsyncs', 'Innodb_os_log_written')",
    ),
  );
  const value = (name: string): number => Number(rows.find((row) => row.Variable_name === name)?.Value ?? 0);
  return { fsyncs: value('Innodb_os_log_fsyncs'), redo: value('Innodb_os_log_written') };
}

/** Each variant's cost per cycle: the median over interleaved rounds of `SLICE_MS` each. */
async function timeVariants(url: string, pid: number, variants: readonly Variant[]): Promise<CycleCost[]> {
  const perRound: CycleCost[][] = variants.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < variants.length; k++) {
      const index = (round + k) % variants.length;
      const runner = await variants[index]!.open(url);
      try {
        const warmEnd = performance.now() + 200;
        while (performance.now() < warmEnd) await runner.cycle();
        const counters = await innodbCounters(url);
        let cycles = 0;
        const server = cpuOf(pid);
        const client = process.cpuUsage();
        const start = performance.now();
        while (performance.now() - start < SLICE_MS) {
          await runner.cycle();
          cycles++;
        }
        const wall = performance.now() - start;
        const clientUsed = process.cpuUsage(client);
        const serverUsed = cpuOf(pid) - server;
        const after = await innodbCounters(url);
        perRound[index]!.push({
          wall: (wall * 1000) / cycles,
          serverCpu: serverUsed / cycles,
          clientCpu: (clientUsed.user + clientUsed.system) / cycles,
          fsyncs: (after.fsyncs - counters.fsyncs) / cycles,
          redo: (after.redo - counters.redo) / cycles,
        });
      } finally {
        await runner.close();
      }
    }
  }
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
  return perRound.map((costs) => ({
    wall: median(costs.map((c) => c.wall)),
    serverCpu: median(costs.map((c) => c.serverCpu)),
    clientCpu: median(costs.map((c) => c.clientCpu)),
    fsyncs: median(costs.map((c) => c.fsyncs)),
    redo: median(costs.map((c) => c.redo)),
  }));
}

interface StatementRow {
  level: number | string;
  event: string;
  text: string;
  calls: number | string;
  avg_us: number | string;
}

/** Runs `CYCLES` cycles of `variant` with the statement history on; its statements, server µs per cycle. */
async function profile(url: string, variant: Variant): Promise<string[]> {
  const runner = await variant.open(url);
  const setup = await connectMysql(url);
  try {
    await setup.query(
      `UPDATE performance_schema.setup_consumers SET ENABLED = 'YES'
        WHERE NAME IN ('events_statements_current', 'events_statements_history_long')`,
    );
    await setup.query('TRUNCATE TABLE performance_schema.events_statements_history_long');
    for (let i = 0; i < 50; i++) await runner.cycle();
    await setup.query('TRUNCATE TABLE performance_schema.events_statements_history_long');
    for (let i = 0; i < CYCLES; i++) await runner.cycle();
    await setup.query(
      `UPDATE performance_schema.setup_consumers SET ENABLED = 'NO'
        WHERE NAME IN ('events_statements_current', 'events_statements_history_long')`,
    );
    const [rows] = await setup.query<mysql.RowDataPacket[]>(
      `SELECT NESTING_EVENT_LEVEL AS level, EVENT_NAME AS event,
              IF(NESTING_EVENT_LEVEL = 0, SUBSTRING_INDEX(SQL_TEXT, '(', 1),
                 REGEXP_REPLACE(LEFT(SQL_TEXT, 70), '[[:space:]]+', ' ')) AS text,
              COUNT(*) AS calls, AVG(TIMER_WAIT) / 1e6 AS avg_us
         FROM performance_schema.events_statements_history_long
        WHERE CURRENT_SCHEMA = DATABASE() AND (SQL_TEXT IS NULL OR SQL_TEXT NOT LIKE '%performance_schema%')
        GROUP BY NESTING_EVENT_LEVEL, EVENT_NAME, text
        ORDER BY MIN(EVENT_ID)`,
    );
    return (rows as StatementRow[]).map((row) => {
      const perCycle = Number(row.calls) / CYCLES;
      const us = (Number(row.avg_us) * Number(row.calls)) / CYCLES;
      return `| ${'  '.repeat(Number(row.level))}${String(row.text ?? row.event).slice(0, 70).padEnd(70)} | ${perCycle
        .toFixed(2)
        .padStart(5)} | ${Number(row.avg_us).toFixed(1).padStart(7)} | ${us.toFixed(1).padStart(7)} |`;
    });
  } finally {
    await setup.end();
    await runner.close();
  }
}

async function migrate(url: string, migrations: readonly (typeof LOCK_MIGRATIONS)[number][]): Promise<void> {
  const dataSource = new DataSource({ type: 'mariadb', url, migrations: [...migrations] });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
}

async function section(
  url: string,
  pid: number,
  title: string,
  variants: readonly Variant[],
  profiled: readonly Variant[],
): Promise<void> {
  const costs = await timeVariants(url, pid, variants);
  console.log(`\n${title}: per W1 cycle, median of ${ROUNDS} interleaved rounds of ${SLICE_MS} ms`);
  console.log(`| ${'variant'.padEnd(60)} | wall µs | server CPU µs | client CPU µs | redo bytes |`);
  variants.forEach((variant, i) => {
    const c = costs[i]!;
    console.log(
      `| ${variant.label.padEnd(60)} | ${c.wall.toFixed(0).padStart(7)} | ${c.serverCpu.toFixed(0).padStart(13)} | ${c.clientCpu
        .toFixed(0)
        .padStart(13)} | ${c.redo.toFixed(0).padStart(10)} |`,
    );
  });
  for (const variant of profiled) {
    console.log(`\n${variant.label}: statements per cycle (performance_schema, ${CYCLES} cycles; µs of server time)`);
    console.log(`| ${'statement'.padEnd(70)} | calls |  avg µs | µs/cyc |`);
    for (const line of await profile(url, variant)) console.log(line);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ndl-profile-mariadb-'));
  const server = await startPrivateMariadb(dir, [
    '--performance-schema=ON',
    '--performance-schema-events-statements-history-long-size=40000',
    '--performance-schema-consumer-events-statements-history-long=OFF',
  ]);
  const keepAlive = setInterval(() => undefined, 1000);
  try {
    const url = server.url.replace(/\/mysql$/, '/ndl_profile');
    await onMysql(server.url, (c) => c.query('CREATE DATABASE ndl_profile'));
    await onMysql(url, (c) =>
      c.query('CREATE TABLE bench_floor (id BIGINT NOT NULL PRIMARY KEY, app_id VARCHAR(200) NOT NULL) ENGINE = InnoDB'),
    );
    const [settings] = await onMysql(url, (c) =>
      c.query('SELECT @@version AS version, @@innodb_flush_log_at_trx_commit AS flush, @@log_bin AS log_bin'),
    );
    console.log(JSON.stringify(settings));
    const [pidRow] = await onMysql(url, (c) => c.query<mysql.RowDataPacket[]>('SELECT @@pid_file AS file'));
    const pid = Number(readFileSync(String((pidRow as mysql.RowDataPacket[])[0]?.file), 'utf8').trim());
    const latest = LOCK_MIGRATIONS.length - 1;
    await migrate(url, LOCK_MIGRATIONS.slice(0, latest));
    const v1Query = groupCall(byQuery, 'bare CALL, first version (group procedure), query');
    await section(
      url,
      pid,
      'Procedures, first version',
      [FLOOR, GET_LOCK, v1Query, groupCall(byExecute, 'bare CALL, first version, execute (prepared)'), LIBRARY],
      [v1Query],
    );
    await migrate(url, LOCK_MIGRATIONS);
    const twinQuery = twinCall(byQuery, 'bare CALL, second version (twin), query');
    await section(
      url,
      pid,
      'Procedures, second version',
      [
        FLOOR,
        twinQuery,
        twinCall(byExecute, 'bare CALL, second version (twin), execute (prepared)'),
        groupCall(byQuery, 'bare CALL, second version (group procedure), query'),
        LIBRARY,
      ],
      [twinQuery],
    );
  } finally {
    clearInterval(keepAlive);
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
