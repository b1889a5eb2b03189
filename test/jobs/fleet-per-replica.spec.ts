import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { createHitsTable, dbNowMs, type Hit, hitsOf, type Replica, startReplica, stopReplicas } from './support/job-fleet.js';

/** Seconds of ticks the fleet is watched for. */
const WINDOW_S = 8;
const REPLICAS = ['replica-a', 'replica-b', 'replica-c'];
/** How long each replica's start-up task runs: the replicas start together, so their tasks would overlap. */
const TIMEOUT_RUN_MS = 1500;

/** Each run of `hits` (a start and the same replica's next end), in database-time order. */
function runsOf(hits: readonly Hit[]): Array<{ appId: string; start: number; end: number }> {
  return hits
    .filter((hit) => hit.phase === 'start')
    .map((start) => ({
      appId: start.appId,
      start: start.dbMs,
      end: hits.find((hit) => hit.phase === 'end' && hit.appId === start.appId && hit.dbMs >= start.dbMs)?.dbMs ?? Infinity,
    }));
}

/** Per-replica and @Timeout jobs on replicas whose clocks agree: they contend for one lock group at the same instant. */
for (const dialect of DIALECTS) {
  dialect.describe(`Per-replica and @Timeout jobs on a fleet whose clocks agree, on ${dialect.name}`, () => {
    const replicas: Replica[] = [];
    let db: TestDatabase;
    /** The watched window of ticks, database clock (epoch ms). */
    let [from, to] = [0, 0];

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await createHitsTable(db, dialect);
      // No clock shift: every replica's timer fires at the same instant. Started together, so that their start-up
      // tasks (1 s after each start) overlap too.
      const env = { JOBS: 'PerReplicaCron,StartupTimeout', TIMEOUT_MS: '1000', TIMEOUT_RUN_MS: String(TIMEOUT_RUN_MS), LOG_LEVELS: '' };
      replicas.push(...(await Promise.all(REPLICAS.map((appId) => startReplica(db.url, appId, 0, env)))));
      from = (await dbNowMs(db, dialect)) + 1000;
      await sleep(WINDOW_S * 1000 + 1500);
      to = from + WINDOW_S * 1000;
      // Every start-up task runs, one after the other.
      await until(
        async () => runsOf(await hitsOf(db, 'startup-timeout')).filter((run) => run.end < Infinity).length >= REPLICAS.length,
        20_000,
      ).catch(() => undefined); // the test says what is missing
      await stopReplicas(replicas);
    }, 90_000);

    afterAll(async () => {
      await stopReplicas(replicas);
      await db?.drop();
    });

    it("runs a 'per-replica' job on every replica at every tick, one replica at a time, and a @Timeout task on every replica", async () => {
      const cron = (await hitsOf(db, 'per-replica-cron')).filter((hit) => hit.dbMs >= from && hit.dbMs < to);
      const perReplica = new Map(REPLICAS.map((appId) => [appId, cron.filter((hit) => hit.phase === 'start' && hit.appId === appId).length]));
      // Each replica waits for the others' runs of the tick instead of skipping it.
      expect(Object.fromEntries(perReplica)).toEqual(Object.fromEntries(REPLICAS.map((appId) => [appId, expect.any(Number)])));
      for (const count of perReplica.values()) expect(count).toBeGreaterThanOrEqual(WINDOW_S - 1);
      // The locks still serialise the runs: none overlaps another.
      const runs = runsOf(cron).filter((run) => run.end < Infinity);
      for (let i = 1; i < runs.length; i++) expect(runs[i]!.start).toBeGreaterThanOrEqual(runs[i - 1]!.end);

      const timeouts = runsOf(await hitsOf(db, 'startup-timeout'));
      expect(timeouts.map((run) => run.appId).sort()).toEqual(REPLICAS);
      for (let i = 1; i < timeouts.length; i++) expect(timeouts[i]!.start).toBeGreaterThanOrEqual(timeouts[i - 1]!.end);
    });
  });
}
