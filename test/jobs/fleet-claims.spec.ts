import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { createHitsTable, dbNowMs, describeWithFaketime, hitsOf, mostAtOnce, type Replica, startReplica, stopReplicas } from './support/job-fleet.js';

/** The @Interval period of the retention test (ms). */
const PERIOD_MS = 4000;
/** Whole periods of the database clock the retention test watches. */
const PERIODS = 4;

/**
 * Makes every claim of a tick take `seconds` longer (a trigger on `locking_job_run`): two claims made a few
 * milliseconds apart by two processes then always overlap, as two claims made at the same instant may.
 */
async function slowClaims(db: TestDatabase, dialect: TestDialect, seconds: number): Promise<void> {
  if (dialect.name === 'MariaDB') {
    await db.query(`CREATE TRIGGER slow_claim BEFORE INSERT ON locking_job_run FOR EACH ROW SET @slept = SLEEP(${seconds})`);
  } else {
    await db.query(`CREATE FUNCTION slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(${seconds}); RETURN NEW; END $$`);
    await db.query('CREATE TRIGGER slow_claim BEFORE INSERT ON locking_job_run FOR EACH ROW EXECUTE FUNCTION slow_claim()');
  }
}

for (const dialect of DIALECTS) {
  describeWithFaketime(dialect)(`Claims of scheduled ticks, on ${dialect.name}`, () => {
    let db: TestDatabase;
    const replicas: Replica[] = [];

    beforeEach(async () => {
      db = await dialect.createDatabase();
      await createHitsTable(db, dialect);
    });
    afterEach(async () => {
      await stopReplicas(replicas.splice(0));
      await db?.drop();
    });

    it('runs an @Interval job once per period when the retention is shorter than the period (its claim is kept)', async () => {
      // Two replicas whose timers fire half a period apart: in every period, the second comes 2 s after the first, when
      // the first's claim is older than the retention (0.5 s) and the reaper (every 200 ms) has pruned the history.
      const env = { JOBS: 'FleetInterval', INTERVAL_MS: String(PERIOD_MS), LOG_RETENTION_MS: '500', REAPER_MS: '200', LOG_LEVELS: '' };
      // An @Interval timer starts with its replica: its phase is when the replica is ready. The second replica is
      // started so as to be ready half a period after the first (its start-up measured on the first), and started
      // again if it came out of phase by more than 1 s, beyond what would let both fire in one period.
      let started = await dbNowMs(db, dialect);
      replicas.push(await startReplica(db.url, 'replica-a', 0, env));
      const phaseA = await dbNowMs(db, dialect);
      const startupMs = phaseA - started;
      const gapOf = (phase: number) => (((phase - phaseA) % PERIOD_MS) + PERIOD_MS) % PERIOD_MS;
      let gap = 0;
      // Up to six tries: a start-up slowed by a busy machine (CI beside other work) can miss the phase three times.
      for (let attempt = 0; attempt < 6 && Math.abs(gap - PERIOD_MS / 2) > 1000; attempt++) {
        if (attempt > 0) await stopReplicas(replicas.splice(1));
        started = await dbNowMs(db, dialect);
        await sleep((((PERIOD_MS / 2 - gapOf(started + startupMs)) % PERIOD_MS) + PERIOD_MS) % PERIOD_MS);
        replicas.push(await startReplica(db.url, 'replica-b', 0, env));
        gap = gapOf(await dbNowMs(db, dialect));
      }
      expect(Math.abs(gap - PERIOD_MS / 2)).toBeLessThanOrEqual(1000);
      const from = (Math.floor((await dbNowMs(db, dialect)) / PERIOD_MS) + 1) * PERIOD_MS;
      const to = from + PERIODS * PERIOD_MS;
      await sleep(to - (await dbNowMs(db, dialect)) + 500);
      await stopReplicas(replicas.splice(0));
      const starts = (await hitsOf(db, 'fleet-interval')).filter((hit) => hit.phase === 'start' && hit.dbMs >= from && hit.dbMs < to);
      // Once per period: PERIODS whole periods (a run claimed at the very end of the period before may start in the
      // window). Both replicas fire in every period: twice as many if a period could be claimed twice.
      expect(starts.length).toBeGreaterThanOrEqual(PERIODS - 1);
      expect(starts.length).toBeLessThanOrEqual(PERIODS + 1);
      // The pruning still works: claims that can no longer be claimed and are older than the retention go.
      const [{ n }] = await db.query<{ n: string }>(
        `SELECT COUNT(*) AS n FROM locking_job_run WHERE job = 'FleetInterval.run'`,
      );
      expect(Number(n)).toBeLessThan(PERIODS);
    }, 60_000);

    it('never runs a job with shared locks twice at once, when two replicas claim two ticks at the same instant', async () => {
      // A read lock with 2 permits: the locks let two runs in; only the claim can keep them apart.
      await db.query("INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ('SHARED_CRON', 'R', 2)");
      await slowClaims(db, dialect, 0.3);
      // Clocks a whole period (1 s) apart: each second, at the same instant, replica a (behind) comes to tick k while
      // replica b (ahead) comes to tick k + 1. A run lasts 1.5 s: b finds the tick it comes to first busy, and a takes
      // that tick over a second later, when b comes to the next one: two claims of two ticks, together.
      const env = { JOBS: 'SharedCron', SHARED_MS: '1500', LOG_LEVELS: '' };
      replicas.push(await startReplica(db.url, 'replica-a', -0.5, env));
      replicas.push(await startReplica(db.url, 'replica-b', 0.5, env));
      await sleep(9000);
      await stopReplicas(replicas.splice(0));
      const hits = await hitsOf(db, 'shared-cron');
      expect(hits.filter((hit) => hit.phase === 'start').length).toBeGreaterThanOrEqual(3);
      expect(mostAtOnce(hits)).toBe(1);
    }, 60_000);
  });
}
