import { Injectable, Module } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockAdminService, WithLocks } from 'nestjs-db-locks';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import { lockAppImports } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** How long each claim of a tick takes (s): a trigger sleeps in the claim's insert of its run row. */
const CLAIM_S = 2;

/** Starts of the job's method. */
const starts = { count: 0 };

@Injectable()
class PausedJobs {
  @Cron('* * * * * *')
  @WithLocks('I50_PAUSE_WRITE')
  async run(): Promise<void> {
    starts.count++;
  }
}

/** Makes every claim of a tick (the insert of a `running` row) sleep CLAIM_S seconds before it commits. */
async function slowClaims(db: TestDatabase, dialect: TestDialect): Promise<void> {
  if (dialect.name === 'MariaDB') {
    await db.query(
      `CREATE TRIGGER i50_slow_claim BEFORE INSERT ON locking_job_run FOR EACH ROW IF NEW.outcome = 'running' THEN SET @slept = SLEEP(${CLAIM_S}); END IF`,
    );
  } else {
    await db.query(`CREATE FUNCTION i50_slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep(${CLAIM_S}); RETURN NEW; END $$`);
    await db.query(
      "CREATE TRIGGER i50_slow_claim BEFORE INSERT ON locking_job_run FOR EACH ROW WHEN (NEW.outcome = 'running') EXECUTE FUNCTION i50_slow_claim()",
    );
  }
}

/** Whether a claim is under way: a session of this database sleeps in the trigger. */
async function claimUnderWay(db: TestDatabase, dialect: TestDialect): Promise<boolean> {
  const rows = await db.query<{ n: string | number }>(
    dialect.name === 'MariaDB'
      ? "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE = 'User sleep'"
      : "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'",
  );
  return Number(rows[0]!.n) > 0;
}

/**
 * Issue 50, item 3: `pauseJob` resolves only once the claims under way are decided. From then on, the job starts
 * nowhere: every start of its method is a run whose claim the history already showed when the pause resolved.
 */
for (const dialect of DIALECTS) {
  dialect.describe(`pauseJob while a claim of a tick is under way, on ${dialect.name}`, () => {
    let db: TestDatabase;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await slowClaims(db, dialect);
    });
    afterAll(async () => {
      await db?.drop();
    });

    it('starts no run after pauseJob resolved: the claim under way was decided before it', async () => {
      starts.count = 0;
      @Module({ imports: lockAppImports(db.url, { appId: 'i50-pause' }), providers: [PausedJobs] })
      class PauseModule {}
      const moduleRef = await Test.createTestingModule({ imports: [PauseModule] }).compile();
      const app = await moduleRef.createNestApplication({ logger: false }).init();
      const admin = app.get(LockAdminService);
      const job = 'PausedJobs.run';
      let claimedAtPause: number;
      try {
        await until(async () => (await admin.getJobs()).some((info) => info.job === job), 10_000);
        await until(() => claimUnderWay(db, dialect), 10_000);
        await admin.pauseJob(job, { actor: 'ops', reason: 'issue 50, item 3' });
        // The runs claimed when the pause resolved, as the history shows them.
        claimedAtPause = (await admin.getJobRuns({ job })).filter((run) => run.startedAt !== null).length;
        // Two ticks recorded paused: the claim that was under way has long been decided.
        await until(async () => (await admin.getJobRuns({ job })).filter((run) => run.outcome === 'paused').length >= 2, 15_000);
      } finally {
        // Awaits the ticks under way: a run claimed late would start here at the latest.
        await app.close();
      }
      // No start beyond the runs claimed when the pause resolved (a claim committed after it would add one).
      expect(starts.count).toBe(claimedAtPause);
      // The claim that was under way when pauseJob was called had committed by then.
      expect(claimedAtPause).toBeGreaterThanOrEqual(1);
    }, 40_000);
  });
}
