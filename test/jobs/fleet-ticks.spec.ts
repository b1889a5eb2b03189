import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { LockAdminService, type LockJobRun } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import {
  createHitsTable,
  dbNowMs,
  describeWithFaketime,
  hitsOf,
  type Replica,
  startReplica,
  stopReplicas,
} from './support/job-fleet.js';

/** Seconds of ticks the fleet is watched for. */
const WINDOW_S = 6;

/** Counts of `values`, by value. */
function countBy<T>(values: readonly T[]): Map<T, number> {
  const counts = new Map<T, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

for (const dialect of DIALECTS) {
  describeWithFaketime(dialect)(`Scheduled jobs on a fleet with skewed clocks, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let admin: LockAdminService;
    let adminSource: DataSource;
    const replicas: Replica[] = [];
    /** The watched window, database clock (epoch ms). */
    let from = 0;
    let to = 0;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await createHitsTable(db, dialect);
      // Three replicas whose clocks are 300 ms apart (the bound of a one-second schedule is a third of it), started a
      // third of a second apart (their @Interval timers start with them).
      const clocks: Array<[string, number]> = [
        ['replica-a', -0.3],
        ['replica-b', 0],
        ['replica-c', 0.3],
      ];
      for (const [appId, skew] of clocks) {
        replicas.push(await startReplica(db.url, appId, skew, { JOBS: 'FleetCron,FleetInterval,PerReplicaCron' }));
        await sleep(333);
      }
      from = (await dbNowMs(db, dialect)) + 1000;
      // Until a second past the window: the replica whose clock is behind comes to its last tick 300 ms late.
      await sleep(WINDOW_S * 1000 + 2000);
      to = from + WINDOW_S * 1000;
      await stopReplicas(replicas);
      adminSource = new DataSource(
        dialect.name === 'MariaDB' ? { type: 'mariadb', url: db.url, timezone: 'Z' } : { type: 'postgres', url: db.url },
      );
      await adminSource.initialize();
      admin = LockAdminService.create(adminSource);
    }, 60_000);

    afterAll(async () => {
      await stopReplicas(replicas);
      await adminSource?.destroy();
      await db?.drop();
    });

    it('starts each @Cron tick exactly once across the fleet, whatever replica clocks 300 ms apart say', async () => {
      const starts = (await hitsOf(db, 'fleet-cron')).filter((hit) => hit.phase === 'start' && hit.dbMs >= from && hit.dbMs < to);
      // From the fleet's side: the database's clock, rounded to the second each run belongs to.
      const perTick = countBy(starts.map((hit) => Math.round(hit.dbMs / 1000)));
      expect([...perTick.values()].every((count) => count === 1)).toBe(true);
      expect(perTick.size).toBeGreaterThanOrEqual(WINDOW_S - 1);
      // The replica that ran a tick saw its own clock at the fire time, within the bound of the database's.
      for (const hit of starts) expect(Math.abs(hit.localMs - hit.dbMs)).toBeLessThan(333 + 150);
    });

    it('records every tick once in the history, with the replicas that came to it after the claim', async () => {
      const runs = (await admin.getJobRuns({ job: 'FleetCron.run', limit: 1000 })).filter(
        (run) => run.tick.getTime() >= from && run.tick.getTime() < to,
      );
      expect(runs.length).toBeGreaterThanOrEqual(WINDOW_S - 1);
      for (const run of runs) {
        expect(run).toMatchObject({ outcome: 'succeeded', error: null });
        expect(run.tick.getTime() % 1000).toBe(0);
        expect(['replica-a', 'replica-b', 'replica-c']).toContain(run.appId);
        // The other replicas came to the tick and were refused (mostly "already run elsewhere"). The cron package
        // itself drops a tick whose timer is more than 250 ms late, so under load a replica may miss one.
        expect(run.skippedElsewhere + run.skippedBusy).toBeGreaterThanOrEqual(1);
        expect(run.skippedElsewhere + run.skippedBusy).toBeLessThanOrEqual(2);
      }
      const refused = runs.reduce((sum, run) => sum + run.skippedElsewhere + run.skippedBusy, 0);
      expect(refused).toBeGreaterThanOrEqual(1.5 * runs.length);
      // The replica whose clock is ahead fires first and wins most ticks.
      const winners = countBy(runs.map((run: LockJobRun) => run.appId));
      expect(winners.get('replica-c') ?? 0).toBeGreaterThan(runs.length / 2);
    });

    it('runs an @Interval job about once per period across the fleet, however the replicas started', async () => {
      const starts = (await hitsOf(db, 'fleet-interval')).filter((hit) => hit.phase === 'start' && hit.dbMs >= from && hit.dbMs < to);
      // Per replica, it would run 3 times a second; across the fleet, once per period of the database's clock.
      expect(starts.length).toBeGreaterThanOrEqual(WINDOW_S - 1);
      expect(starts.length).toBeLessThanOrEqual(WINDOW_S + 1);
      const runs = (await admin.getJobRuns({ job: 'FleetInterval.run', limit: 1000 })).filter((run) => run.outcome === 'succeeded');
      const periods = runs.map((run) => run.tick.getTime() / 1000);
      expect(periods.every(Number.isInteger)).toBe(true);
      expect(new Set(periods).size).toBe(periods.length);
    });

    it("runs a 'per-replica' job on every replica at every tick, each in its own history", async () => {
      const starts = (await hitsOf(db, 'per-replica-cron')).filter((hit) => hit.phase === 'start' && hit.dbMs >= from && hit.dbMs < to);
      const perReplica = countBy(starts.map((hit) => hit.appId));
      for (const appId of ['replica-a', 'replica-b', 'replica-c']) {
        expect(perReplica.get(appId) ?? 0).toBeGreaterThanOrEqual(WINDOW_S - 1);
      }
      const jobs = (await admin.getJobs({ runs: 1 })).map((job) => job.job);
      expect(jobs).toEqual(
        expect.arrayContaining(['PerReplicaCron.run@replica-a', 'PerReplicaCron.run@replica-b', 'PerReplicaCron.run@replica-c']),
      );
    });

    it('registers each job with its schedule, next tick and last success', async () => {
      const jobs = await admin.getJobs({ runs: 2 });
      const cron = jobs.find((job) => job.job === 'FleetCron.run');
      expect(cron).toMatchObject({ schedule: 'cron * * * * * *' });
      expect(cron!.lastRuns).toHaveLength(2);
      expect(cron!.lastSucceededAgeSeconds).toBeGreaterThanOrEqual(0);
      expect(cron!.nextTick!.getTime()).toBeGreaterThan(cron!.lastRuns[0]!.tick.getTime());
      expect(jobs.find((job) => job.job === 'FleetInterval.run')).toMatchObject({ schedule: 'every 1000 ms' });
    });
  });
}
