import type { INestApplicationContext } from '@nestjs/common';
import { LeaderService, LockAdminService } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { bootApplication } from './contenders/library.contender.js';
import { openMysqlBenchDatabase } from './mysql-database.js';
import { type Latency, latencyHead, latencyOf, latencyRow } from './latency.js';

/** The leader hand-over after a graceful `resign`, over many hand-overs (issue 41). */
export interface LeaderHandoverResult {
  readonly candidates: number;
  readonly samples: number;
  /** From the resign call to the next leader's work starting. */
  readonly next: Latency;
  readonly nextMaxMs: number;
  /** From the resign call to the old leader's signal firing. */
  readonly signal: Latency;
  /** From the resign call to `resign` resolving (the role's lock released). */
  readonly resolved: Latency;
}

/** Hand-overs measured per dialect: `BENCH_LEADER_HANDOVERS` (default 100). */
export function leaderHandoverCount(): number {
  const raw = process.env.BENCH_LEADER_HANDOVERS ?? '100';
  const count = Number(raw);
  if (!Number.isInteger(count) || count <= 0) throw new Error(`BENCH_LEADER_HANDOVERS must be a positive integer (got ${raw})`);
  return count;
}

const ROLE = 'bench-handover';
const CANDIDATES = 3;
/**
 * The candidates' re-check while they wait: far longer than any hand-over, so that only the database wakes them (its
 * `NOTIFY`, or the MySQL doorbell), never their own polling.
 */
const RECHECK_MS = 60_000;

interface Candidate {
  readonly appId: string;
  readonly app: INestApplicationContext;
  readonly leaders: LeaderService;
}

/** What the candidates report, on `performance.now()` (one clock: they share the process). */
interface Events {
  starts: { appId: string; t: number }[];
  signals: { appId: string; t: number }[];
}

/**
 * `rounds` hand-overs among three candidates (three application instances with their own app ids and pools, on the
 * bench database): the leader resigns, the next candidate in the queue is elected and its work starts; the one that
 * resigned stands again at the back. Each candidate's wait re-checks only every 60 s, so what is measured is the
 * wake-up by the database.
 */
export async function measureLeaderHandover(url: string, rounds: number): Promise<LeaderHandoverResult> {
  const candidates: Candidate[] = [];
  const events: Events = { starts: [], signals: [] };
  try {
    for (let i = 1; i <= CANDIDATES; i++) {
      const appId = `bench-leader-${i}`;
      const app = await bootApplication(url, appId, { waitRecheckMs: RECHECK_MS });
      candidates.push({ appId, app, leaders: app.get(LeaderService) });
    }
    const admin = candidates[0]!.app.get(LockAdminService);
    const stand = (candidate: Candidate): void =>
      candidate.leaders.campaign(
        ROLE,
        async (signal) => {
          events.starts.push({ appId: candidate.appId, t: performance.now() });
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          events.signals.push({ appId: candidate.appId, t: performance.now() });
        },
        { rejoinDelayMs: 0 },
      );
    for (const candidate of candidates) stand(candidate);
    const next = [] as number[];
    const signals = [] as number[];
    const resolved = [] as number[];
    for (let round = 0; round < rounds; round++) {
      const leader = await queueFormed(candidates, admin);
      const startsBefore = events.starts.length;
      const signalsBefore = events.signals.length;
      const resignedAt = performance.now();
      await leader.leaders.resign(ROLE);
      resolved.push(performance.now() - resignedAt);
      const started = await nextStart(events, startsBefore, leader.appId);
      next.push(started - resignedAt);
      signals.push(events.signals[signalsBefore]!.t - resignedAt);
      stand(leader);
    }
    return {
      candidates: CANDIDATES,
      samples: next.length,
      next: latencyOf(next),
      nextMaxMs: Math.max(...next),
      signal: latencyOf(signals),
      resolved: latencyOf(resolved),
    };
  } finally {
    for (const candidate of candidates) await candidate.app.close();
  }
}

/** Waits until one candidate leads and the others wait for the role in the database; resolves the leader. */
async function queueFormed(candidates: readonly Candidate[], admin: LockAdminService): Promise<Candidate> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const leader = candidates.find((c) => c.leaders.isLeader(ROLE));
    const waiting = (await admin.listWaiters({ name: `leader:${ROLE}` })).length;
    if (leader !== undefined && waiting === candidates.length - 1) return leader;
    if (Date.now() > deadline) throw new Error(`leader hand-over bench: no leader with ${candidates.length - 1} waiters`);
    await sleep(5);
  }
}

/** The next leader's start (of another candidate than `resigned`), recorded after index `from`. */
async function nextStart(events: Events, from: number, resigned: string): Promise<number> {
  const deadline = Date.now() + RECHECK_MS / 2;
  for (;;) {
    const start = events.starts.slice(from).find((s) => s.appId !== resigned);
    if (start !== undefined) return start.t;
    if (Date.now() > deadline) throw new Error('leader hand-over bench: no candidate was elected (woken by polling only?)');
    await sleep(1);
  }
}

/** The leader hand-over table, markdown-friendly. */
export function formatLeaderHandover(result: LeaderHandoverResult, wakeUp: string): string[] {
  return [
    `Leader hand-over after a graceful resign (${result.candidates} candidates, ${result.samples} hand-overs, woken by ${wakeUp}; ` +
      `their own re-check every ${RECHECK_MS / 1000} s):`,
    '',
    ...latencyHead('from the resign call to'),
    latencyRow("the old leader's signal firing", result.signal),
    latencyRow('resign resolving (work ended, role lock released)', result.resolved),
    latencyRow("the next leader's work starting", result.next),
    '',
    `Slowest hand-over: ${result.nextMaxMs.toFixed(2)} ms.`,
  ];
}

/** The MySQL listener's polling knobs, in the build the bench's applications run (dist/, not this build of lib/). */
type PollTiming = { busyMs: number; idleMs: number };

/**
 * On MariaDB/MySQL, the same hand-overs with the listener's fallback poll (every 20 ms while an application has
 * waiters) lengthened to the re-check: the next candidate is woken by the releasing instance's doorbell alone.
 */
export async function measureMysqlLeaderHandover(url: string, rounds: number): Promise<LeaderHandoverResult> {
  const sessions = (await import(new URL('../../dist/store/mysql/mysql-sessions.util.js', import.meta.url).href)) as {
    pollTiming: PollTiming;
  };
  const saved = { ...sessions.pollTiming };
  Object.assign(sessions.pollTiming, { busyMs: RECHECK_MS, idleMs: RECHECK_MS });
  try {
    return await measureLeaderHandover(url, rounds);
  } finally {
    Object.assign(sessions.pollTiming, saved);
  }
}

/** `BENCH_ONLY=leader` on MariaDB/MySQL: its own database, or why it is skipped. */
export async function mysqlLeaderLines(rounds: number): Promise<string[]> {
  const database = await openMysqlBenchDatabase();
  if (typeof database === 'string') return [`MariaDB/MySQL leader hand-over skipped: ${database}.`];
  try {
    return ['MariaDB / MySQL:', '', ...formatLeaderHandover(await measureMysqlLeaderHandover(database.url, rounds), MYSQL_WAKE_UP)];
  } finally {
    await database.dispose();
  }
}

/** How a MariaDB/MySQL candidate is woken in these hand-overs. */
export const MYSQL_WAKE_UP = "the releasing instance's doorbell (the listener's 20 ms poll lengthened to 60 s)";
