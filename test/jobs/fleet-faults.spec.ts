import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { LockAdminService, type LockJobRun } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { createHitsTable, describeWithFaketime, hitsOf, type Replica, startReplica, stopReplicas } from './support/job-fleet.js';

for (const dialect of DIALECTS) {
  describeWithFaketime(dialect)(`Scheduled jobs through faults, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let admin: LockAdminService;
    let adminSource: DataSource;
    let a: Replica;
    let b: Replica;
    /** Runs of a job, oldest tick first. */
    const runsOf = async (job: string): Promise<LockJobRun[]> => (await admin.getJobRuns({ job, limit: 1000 })).reverse();

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await createHitsTable(db, dialect);
      adminSource = new DataSource(
        dialect.name === 'MariaDB' ? { type: 'mariadb', url: db.url, timezone: 'Z' } : { type: 'postgres', url: db.url },
      );
      await adminSource.initialize();
      admin = LockAdminService.create(adminSource);
      const common = { LOG_LEVELS: '', JOBS: 'HangingCron,SlowCron,FailingCron', LEASE_MS: '2000', RENEW_MS: '400', SLOW_MS: '2500', REAPER_MS: '400' };
      // Replica a's clock is 200 ms ahead: it comes to every tick first, and its run of the hanging job never ends.
      a = await startReplica(db.url, 'replica-a', 0.2, { ...common, HANG_MS: '600000' });
      b = await startReplica(db.url, 'replica-b', 0, { ...common, HANG_MS: '20' });
      await until(async () => (await hitsOf(db, 'hanging-cron')).length > 0, 20_000);
      await sleep(5000);
      await a.kill();
      // Replica a's grant expires 2 s after its last renewal; b's reaper frees it, and b runs the next ticks.
      await until(async () => (await hitsOf(db, 'hanging-cron')).some((hit) => hit.appId === 'replica-b'), 20_000);
      await sleep(2000);
      await stopReplicas([b]);
    }, 90_000);

    afterAll(async () => {
      await stopReplicas([a, b].filter(Boolean));
      await adminSource?.destroy();
      await db?.drop();
    });

    it('runs the next ticks elsewhere after a replica dies mid-run, and records that run as abandoned', async () => {
      const runs = await runsOf('HangingCron.run');
      const first = runs.find((run) => run.outcome !== 'skipped')!;
      expect(first).toMatchObject({ appId: 'replica-a', outcome: 'abandoned', durationMs: null });
      const later = runs.filter((run) => run.tick > first.tick && run.outcome !== 'skipped');
      expect(later.length).toBeGreaterThanOrEqual(1);
      expect(later.every((run) => run.appId === 'replica-b' && run.outcome === 'succeeded')).toBe(true);
      // Meanwhile, the ticks found the job busy (its grant alive until the reaper freed it) and say so.
      const skipped = runs.filter((run) => run.tick > first.tick && run.tick < later[0]!.tick);
      expect(skipped.length).toBeGreaterThanOrEqual(1);
      expect(skipped.every((run) => run.outcome === 'skipped' && run.skippedBusy >= 1 && run.appId === null)).toBe(true);
      const hits = await hitsOf(db, 'hanging-cron');
      expect(hits.filter((hit) => hit.appId === 'replica-a').map((hit) => hit.phase)).toEqual(['start']);
    });

    it('skips the ticks that come while a run overruns its period, says so, and never overlaps runs', async () => {
      const hits = await hitsOf(db, 'slow-cron');
      // Each run from its start to its end (the same replica's next end; a run of the killed replica may have none).
      const runsSeen = hits
        .filter((hit) => hit.phase === 'start')
        .map((start) => ({
          start: start.dbMs,
          end: hits.find((hit) => hit.phase === 'end' && hit.appId === start.appId && hit.dbMs >= start.dbMs)?.dbMs,
        }))
        .filter((run): run is { start: number; end: number } => run.end !== undefined);
      expect(runsSeen.length).toBeGreaterThanOrEqual(2);
      // One run at a time across the fleet: each starts after the previous one ended.
      for (let i = 1; i < runsSeen.length; i++) expect(runsSeen[i]!.start).toBeGreaterThanOrEqual(runsSeen[i - 1]!.end);
      const runs = await runsOf('SlowCron.run');
      const ran = runs.filter((run) => run.outcome !== 'skipped');
      expect(ran.filter((run) => run.outcome === 'succeeded').length).toBeGreaterThanOrEqual(2);
      // A run 2.5 s long makes the next two ticks skipped: the next run's tick is 3 s later or more.
      for (let i = 1; i < ran.length; i++) {
        if (ran[i - 1]!.outcome === 'succeeded') expect(ran[i]!.tick.getTime() - ran[i - 1]!.tick.getTime()).toBeGreaterThanOrEqual(3000);
      }
      const skipped = runs.filter((run) => run.outcome === 'skipped');
      expect(skipped.length).toBeGreaterThanOrEqual(2);
      expect(skipped.every((run) => run.skippedBusy >= 1 && run.appId === null && run.startedAt === null)).toBe(true);
    });

    it('records a failing run with its error, once per tick, and runs the next tick', async () => {
      const runs = (await runsOf('FailingCron.run')).filter((run) => run.outcome !== 'skipped');
      expect(runs.length).toBeGreaterThanOrEqual(5);
      expect(runs.every((run) => run.outcome === 'failed' && run.error === 'RangeError')).toBe(true);
      const starts = (await hitsOf(db, 'failing-cron')).filter((hit) => hit.phase === 'start');
      const perTick = new Map<number, number>();
      for (const hit of starts) perTick.set(Math.round(hit.dbMs / 1000), (perTick.get(Math.round(hit.dbMs / 1000)) ?? 0) + 1);
      expect([...perTick.values()].every((count) => count === 1)).toBe(true);
    });
  });
}
