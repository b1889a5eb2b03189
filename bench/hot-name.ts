import { LockService } from 'nestjs-db-locks';
import type { INestApplicationContext } from '@nestjs/common';
import { bootApplication } from './contenders/library.contender.js';
import { connectMysql } from './contenders/mysql-clients.js';
import { openClients } from './contenders/pg-clients.js';
import type { BenchPlan } from './report.js';
import { openBenchDatabase } from './bench-database.js';
import { openMysqlBenchDatabase } from './mysql-database.js';
import { percentile, spreadOf } from './stats.js';

/** The hot name: every caller of the workload wants it, in write mode. */
const HOT = 'bench_hot';
/** W1's name in this part: one caller, uncontended, in the same rounds. */
const ALONE = 'bench_hot_alone';
const INSTANCES = 2;
const CALLERS_PER_INSTANCE = 8;
const CALLERS = INSTANCES * CALLERS_PER_INSTANCE;
/** How long a caller waits for the hot name: far longer than any hand-over, so that no wait times out. */
const WAIT_MS = 10_000;
/** The advisory key of the native row (far from the advisory contender's keys). */
const ADVISORY_KEY = 7_100_000_000;

/** The issue's targets: grants/s of the hot name against W1's cycles/s, and the hand-over median to another instance. */
const TARGETS = {
  postgres: { ofW1: 0.8, handoverMs: 1.2 },
  mysql: { ofW1: 0.6, handoverMs: 3 },
} as const;

/** One slice of one row: what it counted, and its hand-overs (ms) to the same caller's instance and to another. */
interface Slice {
  readonly perSecond: number;
  readonly toOther: number[];
  readonly toSame: number[];
  readonly timedOut: number;
}

/** A row over every round: the median of the slices' rates, and the hand-overs of all slices. */
export interface HotNameRow {
  readonly name: string;
  readonly perSecond: number[];
  readonly toOther: number[];
  readonly toSame: number[];
  timedOut: number;
}

/** The hot-name part of one dialect. */
export interface HotNameResult {
  readonly dialect: 'postgres' | 'mysql';
  readonly hot: HotNameRow;
  readonly alone: HotNameRow;
  readonly native: HotNameRow;
  /** PostgreSQL: the bare durable hand-over (see `durableFloorCycles`); none on MariaDB. */
  readonly floor?: HotNameRow;
  readonly rounds: number;
  readonly sliceSeconds: number;
}

/**
 * One holder at a time (a write lock): the caller that releases notes when it called the release and from which
 * instance; the next grant to resolve is its hand-over, counted to the releasing instance or to another.
 */
class HandoverClock {
  private released: { at: number; instance: number } | undefined;
  readonly toOther: number[] = [];
  readonly toSame: number[] = [];

  granted(instance: number): void {
    const now = performance.now();
    if (this.released !== undefined) (this.released.instance === instance ? this.toSame : this.toOther).push(now - this.released.at);
    this.released = undefined;
  }

  releasing(instance: number): void {
    this.released = { at: performance.now(), instance };
  }
}

/** The warm-up and the measured window of a slice: hand-overs and grants count only within it. */
class Window {
  private readonly from: number;
  private readonly until: number;
  private measuring = false;

  constructor(
    private readonly clock: HandoverClock,
    plan: BenchPlan,
  ) {
    this.from = performance.now() + plan.warmupMs;
    this.until = this.from + plan.sliceSeconds * 1000;
  }

  /** Whether the caller goes on; the hand-overs of the warm-up are dropped when the window opens. */
  going(): boolean {
    const now = performance.now();
    if (now >= this.from && !this.measuring) {
      this.measuring = true;
      this.clock.toOther.length = 0;
      this.clock.toSame.length = 0;
    }
    return now < this.until;
  }

  /** Whether a grant now counts. */
  counting(): boolean {
    return performance.now() >= this.from;
  }
}

/** A caller's loop for a slice: take (waiting), note the grant, release; its grants in the window and its time-outs. */
type Cycle = (clock: HandoverClock, window: Window) => Promise<{ grants: number; timedOut: number }>;

/** Runs `cycles` side by side for a warm-up and a measured window; the slice's rate and hand-overs. */
async function runSlice(cycles: readonly Cycle[], plan: BenchPlan): Promise<Slice> {
  const clock = new HandoverClock();
  const window = new Window(clock, plan);
  const results = await Promise.all(cycles.map((cycle) => cycle(clock, window)));
  const grants = results.reduce((sum, r) => sum + r.grants, 0);
  return {
    perSecond: grants / plan.sliceSeconds,
    toOther: [...clock.toOther],
    toSame: [...clock.toSame],
    timedOut: results.reduce((sum, r) => sum + r.timedOut, 0),
  };
}

/** One session's loop on the database's own lock: `take` blocks until granted, `give` releases. */
function nativeCycle(instance: number, take: () => Promise<unknown>, give: () => Promise<unknown>): Cycle {
  return async (clock, window) => {
    let grants = 0;
    while (window.going()) {
      await take();
      clock.granted(instance);
      if (window.counting()) grants++;
      clock.releasing(instance);
      await give();
    }
    return { grants, timedOut: 0 };
  };
}

/** The library's callers: `perInstance` on each of `instances`, each `tryLocks` of `name` waiting `waitMs`, then release. */
function libraryCycles(instances: readonly LockService[], perInstance: number, name: string, waitMs: number): Cycle[] {
  return instances.flatMap((locks, instance) =>
    Array.from({ length: perInstance }, (): Cycle => async (clock, window) => {
      let grants = 0;
      let timedOut = 0;
      while (window.going()) {
        const stamp = await locks.tryLocks([`${name}_WRITE`], { waitMs });
        if (stamp === 0) {
          timedOut++;
          continue;
        }
        clock.granted(instance);
        if (window.counting()) grants++;
        clock.releasing(instance);
        await locks.releaseLocks(stamp);
      }
      return { grants, timedOut };
    }),
  );
}

/** One cycle per session of the database's own lock (`take` blocks until granted), and the closing of them all. */
function sessionCycles<S>(
  sessions: readonly S[],
  take: (session: S) => Promise<unknown>,
  give: (session: S) => Promise<unknown>,
  end: (session: S) => Promise<unknown>,
): { cycles: Cycle[]; close: () => Promise<void> } {
  return {
    cycles: sessions.map((session, index) => nativeCycle(index % INSTANCES, () => take(session), () => give(session))),
    close: async () => void (await Promise.all(sessions.map(end))),
  };
}

/** The database's own lock on one name, one session per caller, blocking: the speed reference (not durable). */
async function nativeCycles(url: string, mysql: boolean, prefix: string): Promise<{ cycles: Cycle[]; close: () => Promise<void> }> {
  if (mysql) {
    const name = `${prefix}:${HOT}`;
    return sessionCycles(
      await Promise.all(Array.from({ length: CALLERS }, () => connectMysql(url))),
      (connection) => connection.query('SELECT GET_LOCK(?, 10)', [name]),
      (connection) => connection.query('SELECT RELEASE_LOCK(?)', [name]),
      (connection) => connection.end(),
    );
  }
  return sessionCycles(
    await openClients(url, CALLERS),
    (client) => client.query('SELECT pg_advisory_lock($1)', [ADVISORY_KEY]),
    (client) => client.query('SELECT pg_advisory_unlock($1)', [ADVISORY_KEY]),
    (client) => client.end(),
  );
}

/**
 * The floor of a durable hand-over on PostgreSQL, bare: two sessions pass the name back and forth, each turn one
 * transaction of the releasing session (UPDATE of one row, `pg_notify` to the other session, COMMIT waiting for the
 * disk) that the other session hears as its grant. What any hand-over within one durable commit costs at the least:
 * the commit and the notification's delivery, with no lock logic.
 */
async function durableFloorCycles(url: string): Promise<{ cycles: Cycle[]; close: () => Promise<void> }> {
  const clients = await openClients(url, INSTANCES);
  await clients[0]!.query(
    'CREATE TABLE IF NOT EXISTS bench_hot_floor (id int PRIMARY KEY, holder int); ' +
      'INSERT INTO bench_hot_floor VALUES (1, 0) ON CONFLICT (id) DO NOTHING',
  );
  for (const [i, client] of clients.entries()) await client.query(`LISTEN bench_hot_floor_${i}`);
  const cycle: Cycle = async (clock, window) => {
    let grants = 0;
    for (let turn = 0; window.going(); turn++) {
      const holder = turn % INSTANCES;
      const next = (turn + 1) % INSTANCES;
      const heard = new Promise<void>((resolve) => clients[next]!.once('notification', () => resolve()));
      clock.releasing(holder);
      await clients[holder]!.query(
        `BEGIN; SET LOCAL synchronous_commit = on; UPDATE bench_hot_floor SET holder = ${next} WHERE id = 1; ` +
          `SELECT pg_notify('bench_hot_floor_${next}', '${turn}'); COMMIT`,
      );
      await heard;
      clock.granted(next);
      if (window.counting()) grants++;
    }
    return { grants, timedOut: 0 };
  };
  return { cycles: [cycle], close: async () => void (await Promise.all(clients.map((client) => client.end()))) };
}

/**
 * The hot-name workload: 16 callers (two application instances × 8) each taking the same write lock with a wait and
 * releasing it at once, beside W1's shape (one caller, uncontended) and the database's own lock on one name (16
 * sessions, blocking), in `plan.rounds` interleaved rounds of `plan.sliceSeconds` after `plan.warmupMs`.
 * `prefix` keeps `GET_LOCK` names apart on a shared server.
 */
export async function measureHotName(url: string, plan: BenchPlan, prefix = 'bench'): Promise<HotNameResult> {
  const mysql = url.startsWith('mysql:');
  const apps: INestApplicationContext[] = [];
  try {
    for (let i = 0; i < INSTANCES; i++) apps.push(await bootApplication(url, `bench-hot-${i}`));
    const instances = apps.map((app) => app.get(LockService));
    const rows = { hot: emptyRow('hot'), alone: emptyRow('alone'), native: emptyRow('native'), floor: emptyRow('floor') };
    const order = mysql ? (['hot', 'alone', 'native'] as const) : (['hot', 'alone', 'native', 'floor'] as const);
    for (let round = 0; round < plan.rounds; round++) {
      const progress: string[] = [];
      for (let position = 0; position < order.length; position++) {
        const row = order[(round + position) % order.length]!;
        let close = async (): Promise<void> => undefined;
        let cycles: Cycle[];
        if (row === 'hot') cycles = libraryCycles(instances, CALLERS_PER_INSTANCE, HOT, WAIT_MS);
        else if (row === 'alone') cycles = libraryCycles(instances.slice(0, 1), 1, ALONE, 0);
        else if (row === 'native') ({ cycles, close } = await nativeCycles(url, mysql, prefix));
        else ({ cycles, close } = await durableFloorCycles(url));
        try {
          const slice = await runSlice(cycles, plan);
          const target = rows[row];
          target.perSecond.push(slice.perSecond);
          target.toOther.push(...slice.toOther);
          target.toSame.push(...slice.toSame);
          target.timedOut += slice.timedOut;
          progress.push(`${row} ${slice.perSecond.toFixed(0)}/s`);
        } finally {
          await close();
        }
      }
      process.stderr.write(`hot name (${mysql ? 'MariaDB' : 'PostgreSQL'}) round ${round + 1}/${plan.rounds}: ${progress.join(', ')}\n`);
    }
    const { floor, ...always } = rows;
    return { dialect: mysql ? 'mysql' : 'postgres', ...always, ...(mysql ? {} : { floor }), rounds: plan.rounds, sliceSeconds: plan.sliceSeconds };
  } finally {
    for (const app of apps) await app.close();
  }
}

function emptyRow(name: string): HotNameRow {
  return { name, perSecond: [], toOther: [], toSame: [], timedOut: 0 };
}

const median = (values: readonly number[]): number => spreadOf(values).median;
const ms = (samples: readonly number[], p: number): string =>
  samples.length === 0 ? '—' : percentile([...samples].sort((a, b) => a - b), p).toFixed(2);

/** The hot-name table and its targets; `missed` names the targets not met. */
export function formatHotName(result: HotNameResult): { lines: string[]; missed: string[] } {
  const native = result.dialect === 'mysql' ? 'GET_LOCK(name, 10), 16 sessions (not durable)' : 'pg_advisory_lock, 16 sessions, blocking (not durable)';
  const rows: Array<[string, HotNameRow]> = [
    ['nestjs-db-locks, one hot name: 2 instances x 8 callers, waitMs', result.hot],
    ['nestjs-db-locks, W1: 1 caller, uncontended', { ...result.alone, toOther: [], toSame: [] }],
    [native, result.native],
    ...(result.floor ? [['a durable hand-over, bare: 2 sessions, UPDATE + pg_notify + COMMIT', result.floor] as [string, HotNameRow]] : []),
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const target = TARGETS[result.dialect];
  const ofW1 = median(result.hot.perSecond) / median(result.alone.perSecond);
  const handover = result.hot.toOther.length === 0 ? Number.NaN : percentile([...result.hot.toOther].sort((a, b) => a - b), 50);
  const metRate = ofW1 >= target.ofW1;
  const metHandover = handover <= target.handoverMs;
  const label = result.dialect === 'mysql' ? 'MariaDB' : 'PostgreSQL';
  return {
    lines: [
      `Hot name (${label}; every caller takes the same write lock and releases it at once; median of ${result.rounds} ` +
        `interleaved rounds of ${result.sliceSeconds} s; hand-over: from the release call to the next holder's grant):`,
      '',
      `| ${'row'.padEnd(width)} | grants/s | to another instance: median ms | p99 ms | to the same instance: median ms | p99 ms |`,
      `|${'-'.repeat(width + 2)}|---------:|-------------------------------:|-------:|--------------------------------:|-------:|`,
      // One caller hands over to nobody: the time between its grants is its cycle, not a hand-over.
      ...rows.map(
        ([name, row]) =>
          `| ${name.padEnd(width)} | ${median(row.perSecond).toFixed(0).padStart(8)} | ${ms(row.toOther, 50).padStart(30)} | ` +
          `${ms(row.toOther, 99).padStart(6)} | ${ms(row.toSame, 50).padStart(31)} | ${ms(row.toSame, 99).padStart(6)} |`,
      ),
      '',
      `${label} hot name / W1: ${ofW1.toFixed(2)} x (target >= ${target.ofW1}) ${metRate ? 'met' : 'MISSED'}; ` +
        `hand-over to another instance, median: ${handover.toFixed(2)} ms (target <= ${target.handoverMs} ms) ` +
        `${metHandover ? 'met' : 'MISSED'}; waits timed out: ${result.hot.timedOut}` +
        (result.floor
          ? `; the bare durable hand-over (the floor of any): ${ms(result.floor.toOther, 50)} ms median, ` +
            `${median(result.floor.perSecond).toFixed(0)}/s (${(median(result.floor.perSecond) / median(result.alone.perSecond)).toFixed(2)} x W1)`
          : ''),
    ],
    missed: [...(metRate ? [] : [`${label} hot name / W1`]), ...(metHandover ? [] : [`${label} hot-name hand-over median`])],
  };
}

/** `BENCH_ONLY=hot`: the hot-name part on PostgreSQL, then on MariaDB/MySQL (each on its own database, one at a time). */
export async function hotNameOnly(plan: BenchPlan): Promise<{ lines: string[]; missed: string[] }> {
  const postgres = await openBenchDatabase();
  let pgPart: { lines: string[]; missed: string[] };
  try {
    pgPart = formatHotName(await measureHotName(postgres.url, plan));
  } finally {
    await postgres.dispose();
  }
  const mysql = await openMysqlBenchDatabase();
  if (typeof mysql === 'string') return { lines: [...pgPart.lines, '', `MariaDB/MySQL hot name skipped: ${mysql}.`], missed: pgPart.missed };
  try {
    const part = formatHotName(await measureHotName(mysql.url, plan, mysql.name));
    return { lines: [...pgPart.lines, '', ...part.lines], missed: [...pgPart.missed, ...part.missed] };
  } finally {
    await mysql.dispose();
  }
}
