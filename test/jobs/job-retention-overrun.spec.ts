import { Injectable, Module } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { lockAppImports } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** How long one run lasts (ms): three ticks of the one-second schedule, and six times the retention. */
const RUN_MS = 3000;

/** The runs of the job: started, ended, going now, and the most going at once. */
const runs = { started: 0, ended: 0, running: 0, most: 0 };

@Injectable()
class OverrunJobs {
  /** A read lock with 5 permits (the test gives them): only the tick's claim keeps two runs apart. */
  @Cron('* * * * * *')
  @WithLocks('I50_OVERRUN_READ')
  async run(): Promise<void> {
    runs.started++;
    runs.most = Math.max(runs.most, ++runs.running);
    await sleep(RUN_MS);
    runs.running--;
    runs.ended++;
  }
}

/**
 * Issue 50, item 2: a run that outlives `logRetentionMs` keeps its claim. The reaper prunes the history every 200 ms
 * with a retention of 500 ms while a run lasts 3 s: the ticks that come meanwhile must find the job busy, never
 * claim and run beside it.
 */
for (const dialect of DIALECTS) {
  dialect.describe(`A job running longer than logRetentionMs, on ${dialect.name}`, () => {
    let db: TestDatabase;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await db.query("INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ('I50_OVERRUN', 'R', 5)");
    });
    afterAll(async () => {
      await db?.drop();
    });

    it('finds the ticks that come during a run longer than the retention busy: one run at a time', async () => {
      Object.assign(runs, { started: 0, ended: 0, running: 0, most: 0 });
      @Module({
        imports: lockAppImports(db.url, { appId: 'i50-overrun', logRetentionMs: 500, reaperIntervalMs: 200 }),
        providers: [OverrunJobs],
      })
      class OverrunModule {}
      const moduleRef = await Test.createTestingModule({ imports: [OverrunModule] }).compile();
      const app = await moduleRef.createNestApplication({ logger: false }).init();
      try {
        // The first run ends 3 s after it started: two or three ticks came meanwhile, each long after the run's claim
        // was older than the retention and past its tick's claimable time.
        await until(() => runs.ended >= 1, 15_000);
      } finally {
        await app.close();
      }
      expect(runs.most).toBe(1);
      // The ticks that came during the first run were not run: at most the one right after it ended started.
      expect(runs.started).toBeLessThanOrEqual(2);
    }, 30_000);
  });
}
