import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { createHitsTable, dbNowMs, type Hit, hitsOf, type Replica, startReplica, stopReplicas } from './support/job-fleet.js';

/** Seconds of ticks the fleet is watched for. */
const WINDOW_S = 6;

/** The jobs every replica runs (test/jobs/support/job-replica.child.mjs). */
const JOBS = process.env.NDL_IDENTITY_JOBS ?? 'AppTimerCron,DecoratedCron,Twins,InheritedCron,RuntimeCron';

// Issue 36, items 2, 4 and 8: what a tick is, and whose, from the fleet's side. Two replicas whose clocks agree fire
// every tick at the same instant: each tick must start exactly once across them, whatever surrounds the job.
for (const dialect of DIALECTS) {
  dialect.describe(`A tick is the schedule's own invocation of a job, on ${dialect.name}`, () => {
    let db: TestDatabase;
    const replicas: Replica[] = [];
    /** The watched window, database clock (epoch ms): from the first tick after every application timer started. */
    const window = { from: 0, to: 0 };

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await createHitsTable(db, dialect);
      // Two replicas whose clocks agree: both fire every tick at the same instant.
      for (const appId of ['replica-a', 'replica-b']) replicas.push(await startReplica(db.url, appId, 0, { JOBS, NAMED_TWINS: '1' }));
      // The application timers of AppTimerCron start within 1.7 s of a replica's bootstrap.
      window.from = (await dbNowMs(db, dialect)) + 2000;
      window.to = window.from + WINDOW_S * 1000;
      await sleep(WINDOW_S * 1000 + 3000);
      await stopReplicas(replicas);
    }, 60_000);

    afterAll(async () => {
      await stopReplicas(replicas);
      await db?.drop();
    });

    /** Starts of `job` in the window. */
    async function startsOf(job: string): Promise<Hit[]> {
      return (await hitsOf(db, job)).filter((hit) => hit.phase === 'start' && hit.dbMs >= window.from && hit.dbMs < window.to);
    }

    /** Starts of `job` in the window, counted by the second (database clock) each belongs to. */
    async function startsPerSecond(job: string): Promise<number[]> {
      const starts = await startsOf(job);
      const counts = new Map<number, number>();
      for (const hit of starts) counts.set(Math.floor(hit.dbMs / 1000), (counts.get(Math.floor(hit.dbMs / 1000)) ?? 0) + 1);
      return [...counts.values()];
    }

    /** Succeeded runs of `job` in the history. */
    async function recordedRuns(job: string): Promise<number> {
      const [row] = await db.query<{ runs: string }>("SELECT COUNT(*) AS runs FROM locking_job_run WHERE job = $1 AND outcome = 'succeeded'", [job]);
      return Number(row!.runs);
    }

    /** Each second of the window had exactly one start of `job` across the fleet. */
    async function expectOncePerTick(job: string): Promise<void> {
      const perSecond = await startsPerSecond(job);
      expect(perSecond.length).toBeGreaterThanOrEqual(WINDOW_S - 1);
      expect(perSecond.filter((count) => count !== 1)).toEqual([]);
    }

    it('runs every tick of a job the application also calls from a timer of its own: that call is never a tick (item 2)', async () => {
      // A retry 700 ms after each fire time, on each replica: a direct call, run under the locks, claiming nothing.
      await expectOncePerTick('app-timer-cron:tick');
      expect((await startsOf('app-timer-cron:retry')).length).toBeGreaterThanOrEqual(WINDOW_S - 1);
      expect(await recordedRuns('AppTimerCron.run')).toBeGreaterThanOrEqual(WINDOW_S - 1);
    });

    it('claims each tick once through a user decorator that awaits between @Cron and @WithLocks (item 2)', async () => {
      await expectOncePerTick('decorated-cron');
      expect(await recordedRuns('DecoratedCron.run')).toBeGreaterThanOrEqual(WINDOW_S - 1);
    });

    it('runs two job classes both named TasksService as two jobs, under their schedules\' names (item 4)', async () => {
      await expectOncePerTick('twin-a');
      await expectOncePerTick('twin-b');
      expect(await recordedRuns('reports-a')).toBeGreaterThanOrEqual(WINDOW_S - 1);
      expect(await recordedRuns('reports-b')).toBeGreaterThanOrEqual(WINDOW_S - 1);
      expect(await recordedRuns('TasksService.run')).toBe(0);
    });

    it('records an inherited job under the subclass it is registered as (item 4)', async () => {
      await expectOncePerTick('inherited-cron');
      expect(await recordedRuns('InheritedCron.run')).toBeGreaterThanOrEqual(WINDOW_S - 1);
      expect(await recordedRuns('BaseCron.run')).toBe(0);
    });

    it('claims each tick of a job registered at run time through LockService.scheduledTick once (item 8)', async () => {
      await expectOncePerTick('runtime-cron');
      expect(await recordedRuns('runtime-cron')).toBeGreaterThanOrEqual(WINDOW_S - 1);
    });
  });
}
