import { jest } from '@jest/globals';
import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { LeaderService, LockAdminService, WithLocks } from 'nestjs-db-locks';
import { mostLeadersAtOnce, standInOrder } from '../support/leader-fleet.js';
import { createLockApp, type LockApp, trackApps } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { createGaleraDatabase, describeOnGalera, type GaleraDatabase } from './support/galera.js';

/** Whole seconds of ticks the fleet of test 1 is watched for. */
const WINDOW_S = 10;
/** How long a claim of the paused job's ticks takes (s) while its trigger is there. */
const CLAIM_S = 2;
const NODES = ['node 1', 'node 2', 'node 3'];

/** A start of a job's method on one replica (this process's clock). */
interface Start {
  readonly job: string;
  readonly app: string;
  /** The second of the tick it belongs to (its fire time, floored: every replica runs on this machine's clock). */
  readonly tick: number;
  readonly at: number;
}

/** What the replicas of this process did, seen from the fleet's side: every start, and the most runs of a job at once. */
const fleet = {
  starts: [] as Start[],
  running: new Map<string, number>(),
  most: new Map<string, number>(),
  reset(): void {
    this.starts.length = 0;
    this.running.clear();
    this.most.clear();
  },
  async run(job: string, app: string, ms: number): Promise<void> {
    const now = Date.now();
    this.starts.push({ job, app, tick: Math.floor(now / 1000), at: performance.now() });
    const running = (this.running.get(job) ?? 0) + 1;
    this.running.set(job, running);
    this.most.set(job, Math.max(this.most.get(job) ?? 0, running));
    try {
      await sleep(ms);
    } finally {
      this.running.set(job, this.running.get(job)! - 1);
    }
  },
};

/**
 * Two jobs every second: one under a write lock, and one under a read lock with a permit per replica, whose locks let
 * all three replicas in at once: only its claim of the tick (certified by the cluster) keeps its runs apart.
 */
@Injectable()
class GaleraTicks {
  app = '?';

  @Cron('* * * * * *')
  @WithLocks('GJ_TICK_WRITE')
  async exclusive(): Promise<void> {
    await fleet.run('exclusive', this.app, 100);
  }

  @Cron('* * * * * *')
  @WithLocks('GJ_SHARED_READ')
  async shared(): Promise<void> {
    await fleet.run('shared', this.app, 400);
  }
}

@Injectable()
class GaleraPaused {
  app = '?';

  @Cron('* * * * * *')
  @WithLocks('GJ_PAUSE_WRITE')
  async run(): Promise<void> {
    await fleet.run('paused', this.app, 50);
  }
}

/** Counts of `values`, by value. */
function countBy<T>(values: readonly T[]): Map<T, number> {
  const counts = new Map<T, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

/** TypeORM's warning at each instance this process opens (each its own default DataSource): not the library's. */
const DEFAULT_SOURCE = /data source with the default name is already registered/;

/** Returns the lines logged at WARN and ERROR level from now on (but TypeORM's), as `level: message`. */
function spyLogs() {
  const spies = (['warn', 'error'] as const).map((level) => [level, jest.spyOn(Logger.prototype, level)] as const);
  return () =>
    spies.flatMap(([level, spy]) =>
      spy.mock.calls.map(([message]) => `${level}: ${String(message)}`).filter((line) => !DEFAULT_SOURCE.test(line)),
    );
}

/**
 * Issue 49 on Galera, from the fleet's side: instances of one process, each on its own node (node 1, 2, 3), claim the
 * ticks of one-second jobs, obey a pause sent through another node, and elect one leader of a role at a time. Their
 * claims, controls and elections write shared rows (the job's row, the grant's log row): the cluster's certification
 * orders them as one server's row locks would.
 */
describeOnGalera('Galera: scheduled jobs and leader election with instances on three nodes', () => {
  let db: GaleraDatabase;
  /** Instances whose `close` may be called twice (a test closes one, the hook closes every one). */
  const apps = trackApps(async (...args: Parameters<typeof createLockApp>): Promise<LockApp> => {
    const app = await createLockApp(...args);
    let closing: Promise<void> | undefined;
    return { ...app, close: () => (closing ??= app.close()) };
  });

  beforeAll(async () => {
    db = await createGaleraDatabase();
    // The shared job's read lock: a permit for each replica.
    await db.query("INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ('GJ_SHARED', 'R', 3)");
  }, 60_000);
  beforeEach(() => fleet.reset());
  afterEach(async () => {
    await apps.closeAll();
    jest.restoreAllMocks();
  });
  afterAll(() => db?.drop());

  it('runs every tick of a one-second job exactly once across replicas on three nodes, never two runs at once', async () => {
    const logs = spyLogs();
    for (const [i, url] of db.urls.entries()) {
      const app = await apps.start(url, { appId: `ticks-${i + 1}` }, 4, [GaleraTicks]);
      app.app.get(GaleraTicks).app = NODES[i]!;
    }
    const from = Math.floor(Date.now() / 1000) + 1;
    const to = from + WINDOW_S;
    await sleep((to + 1.2) * 1000 - Date.now());
    await apps.closeAll(); // awaits the runs under way
    const reader = await apps.start(db.urls[2]!, { appId: 'ticks-reader' });
    const admin = reader.app.get(LockAdminService);

    const report: string[] = [];
    for (const job of ['exclusive', 'shared'] as const) {
      const starts = fleet.starts.filter((start) => start.job === job && start.tick >= from && start.tick < to);
      const perTick = countBy(starts.map((start) => start.tick));
      // Each tick once: none twice, at most one missed (the cron package drops a timer more than 250 ms late).
      expect([...perTick].filter(([, count]) => count !== 1)).toEqual([]);
      expect(perTick.size).toBeGreaterThanOrEqual(WINDOW_S - 1);
      expect(fleet.most.get(job)).toBe(1);
      // The history, read on node 3, agrees: one run per tick, by the replica that ran it; the others were refused.
      const runs = (await admin.getJobRuns({ job: `GaleraTicks.${job}`, limit: 1000 })).filter(
        (run) => run.tick.getTime() >= from * 1000 && run.tick.getTime() < to * 1000,
      );
      expect(runs.map((run) => run.outcome).filter((outcome) => outcome !== 'succeeded')).toEqual([]);
      const ranBy = new Map(starts.map((start) => [start.tick, start.app]));
      expect(new Map(runs.map((run) => [run.tick.getTime() / 1000, NODES[Number(run.appId!.slice(-1)) - 1]]))).toEqual(ranBy);
      for (const run of runs) expect(run.skippedElsewhere + run.skippedBusy).toBeLessThanOrEqual(2);
      const refused = runs.reduce((sum, run) => sum + run.skippedElsewhere + run.skippedBusy, 0);
      expect(refused).toBeGreaterThanOrEqual(runs.length); // the other replicas came too, on their nodes
      const winners = [...countBy(starts.map((start) => start.app))].map(([node, n]) => `${node} ${n}`).join(', ');
      report.push(`${job}: ${perTick.size} ticks, won by ${winners}; ${refused} refusals (elsewhere ${runs.reduce((s, r) => s + r.skippedElsewhere, 0)})`);
    }
    console.log(`galera ticks:\n${report.join('\n')}\nlogged:\n${logs().join('\n') || '(nothing at WARN/ERROR)'}`);
    expect(logs().filter((line) => line.startsWith('error'))).toEqual([]);
  }, 60_000);

  it('starts no run anywhere once pauseJob sent through node 1 resolved, while replicas on nodes 2 and 3 claim its ticks', async () => {
    const logs = spyLogs();
    const job = 'GaleraPaused.run';
    const admin = (await apps.start(db.urls[0]!, { appId: 'pause-admin' })).app.get(LockAdminService);
    // Every claim of a tick (its insert of a `running` row, on the node of the replica) sleeps CLAIM_S before it commits.
    await db.query(
      `CREATE TRIGGER gj_slow_claim BEFORE INSERT ON locking_job_run FOR EACH ROW IF NEW.job = '${job}' AND NEW.outcome = 'running' THEN SET @slept = SLEEP(${CLAIM_S}); END IF`,
    );
    for (const i of [2, 3]) {
      const app = await apps.start(db.urls[i - 1]!, { appId: `pause-${i}` }, 4, [GaleraPaused]);
      app.app.get(GaleraPaused).app = NODES[i - 1]!;
    }
    /** The node (2 or 3) where a claim sleeps in the trigger now, if any. */
    const claimingOn = async (): Promise<number | undefined> => {
      for (const i of [2, 3]) {
        const rows = await db.queryOn<{ n: string | number }>(
          i,
          "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE = 'User sleep'",
        );
        if (Number(rows[0]!.n) > 0) return i;
      }
      return undefined;
    };
    /** The runs the history shows claimed (started), read through node 1's instance as the operator would. */
    const claimed = async () => (await admin.getJobRuns({ job, limit: 1000 })).filter((run) => run.startedAt !== null).length;
    const seen: string[] = [];

    // 1. A claim under way on node 2 or 3 (asleep in the trigger) when the pause is sent through node 1.
    await until(async () => (await admin.getJobs()).some((info) => info.job === job), 10_000);
    let node: number | undefined;
    await until(async () => (node = await claimingOn()) !== undefined, 10_000);
    await admin.pauseJob(job, { actor: 'ops', reason: 'issue 49: claim under way' });
    let claimedAtPause = await claimed();
    let startsAtPause = fleet.starts.length;
    await until(async () => (await admin.getJobRuns({ job, limit: 1000 })).filter((run) => run.outcome === 'paused').length >= 2, 15_000);
    await sleep(300);
    // No start beyond the runs claimed when the pause resolved.
    expect(fleet.starts.length).toBe(claimedAtPause);
    seen.push(`claim under way on node ${node}: ${claimedAtPause} claimed at the pause (${startsAtPause} started by then)`);
    await db.query('DROP TRIGGER gj_slow_claim');

    // 2. Fast claims: resumed, runs on nodes 2 and 3, paused through node 1 just after a tick fired (claims racing).
    for (let round = 0; round < 3; round++) {
      await admin.resumeJob(job, { actor: 'ops', reason: `round ${round}` });
      const before = fleet.starts.length;
      await until(() => fleet.starts.length > before, 5000); // it runs again
      await sleep(1000 - (Date.now() % 1000) + 3 + round * 4); // a few ms past the next fire time
      await admin.pauseJob(job, { actor: 'ops', reason: `round ${round}` });
      claimedAtPause = await claimed();
      startsAtPause = fleet.starts.length;
      await sleep(2500); // two ticks found paused, and a run claimed before the pause has started
      expect(fleet.starts.length).toBe(claimedAtPause);
      seen.push(`round ${round}: ${claimedAtPause} claimed at the pause (${startsAtPause} started by then)`);
    }
    await apps.closeAll();
    expect(fleet.starts.length).toBe(claimedAtPause);
    const reader = (await apps.start(db.urls[0]!, { appId: 'pause-reader' })).app.get(LockAdminService);
    const outcomes = countBy((await reader.getJobRuns({ job, limit: 1000 })).map((run) => run.outcome));
    const ranOn = countBy(fleet.starts.map((start) => start.app));
    console.log(
      `galera pause:\n${seen.join('\n')}\noutcomes ${JSON.stringify(Object.fromEntries(outcomes))}, ran on ${JSON.stringify(Object.fromEntries(ranOn))}` +
        `\nlogged:\n${logs().join('\n') || '(nothing at WARN/ERROR)'}`,
    );
    expect(logs().filter((line) => line.startsWith('error'))).toEqual([]);
  }, 60_000);

  it('elects at most one leader at a time among candidates on three nodes, with growing terms, and another node takes over when the leader goes', async () => {
    const logs = spyLogs();
    const role = 'galera-role';
    const instances: LockApp[] = [];
    for (const [i, url] of db.urls.entries()) instances.push(await apps.start(url, { appId: `leader-${i + 1}`, shutdownGraceMs: 500 }));
    const leaders = instances.map((instance) => instance.app.get(LeaderService));
    // The witness: every 2 ms, how many of the three believe they lead (one process: read at one instant).
    let most = 0;
    const tokens: number[] = [];
    const witness = setInterval(() => {
      const believing = leaders.filter((service) => service.isLeader(role));
      most = Math.max(most, believing.length);
      const token = believing[0]?.term(role)?.token;
      if (token !== undefined && token !== tokens.at(-1)) tokens.push(token);
    }, 2);
    const admin = instances[2]!.app.get(LockAdminService);
    const waiting = (count: number) => until(async () => (await admin.listWaiters({ name: `leader:${role}` })).length === count, 10_000);
    const leaderNow = () => leaders.findIndex((service) => service.isLeader(role));
    try {
      const { told, stand } = await standInOrder(leaders, role);
      await waiting(2);
      const handOvers: string[] = [];
      // Resigns: the leader on one node steps down, a candidate on another node is elected with a larger term.
      for (let round = 0; round < 6; round++) {
        const from = leaderNow();
        expect(from).toBeGreaterThanOrEqual(0);
        const term = leaders[from]!.term(role)!;
        const started = performance.now();
        await leaders[from]!.resign(role);
        await until(() => leaderNow() >= 0, 10_000);
        const to = leaderNow();
        expect(to).not.toBe(from);
        expect(leaders[to]!.term(role)!.token).toBeGreaterThan(term.token);
        handOvers.push(`${NODES[from]} → ${NODES[to]} (term ${term.token} → ${leaders[to]!.term(role)!.token}) ${Math.round(performance.now() - started)} ms`);
        // The database says so too, read on node 3.
        const [info] = await admin.getLeaders({ role });
        expect(info!.leader).toMatchObject({ appId: `leader-${to + 1}`, term: leaders[to]!.term(role)!.token });
        stand(from); // it stands again, at the back
        await waiting(2);
      }
      // The leader's instance closes: a candidate on another node takes over with a larger term.
      const from = leaderNow();
      const term = leaders[from]!.term(role)!;
      await instances[from]!.close();
      await until(() => leaderNow() >= 0, 10_000);
      const to = leaderNow();
      expect(to).not.toBe(from);
      expect(leaders[to]!.term(role)!.token).toBeGreaterThan(term.token);
      handOvers.push(`${NODES[from]} closed → ${NODES[to]} (term ${term.token} → ${leaders[to]!.term(role)!.token})`);

      // What each was told, in order: never two leaders, each election a larger term than the one before.
      expect(mostLeadersAtOnce(told)).toBe(1);
      const elected = told.filter((change) => change.leading).map((change) => change.token);
      expect(elected).toHaveLength(8);
      for (let i = 1; i < elected.length; i++) expect(elected[i]!).toBeGreaterThan(elected[i - 1]!);
      console.log(`galera leaders:\n${handOvers.join('\n')}\nterms ${elected.join(', ')}\nlogged:\n${logs().join('\n') || '(nothing at WARN/ERROR)'}`);
    } finally {
      clearInterval(witness);
    }
    expect(most).toBe(1);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    expect(logs().filter((line) => line.startsWith('error'))).toEqual([]);
  }, 60_000);
});
