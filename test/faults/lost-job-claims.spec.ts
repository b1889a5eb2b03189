import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { LockAdminService, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { type FaultProxy, startFaultProxy } from '../support/tcp-proxy.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Runs of the job (this process's clock at each start). */
const runs: number[] = [];

@Injectable()
class LostClaimJobs {
  @Cron('* * * * * *')
  @WithLocks('LOST_CLAIM_WRITE')
  async run(): Promise<void> {
    runs.push(Date.now());
  }
}

/**
 * A statement of the claim in each dialect's proxy: PostgreSQL's claim (its result column `tick_ms`, in the claim's
 * text before and after `locking_claim_job_tick`), MySQL's insert of the tick's row (then the COMMIT's answer is lost).
 */
const CLAIM = { PostgreSQL: 'tick_ms', MariaDB: 'INSERT INTO locking_job_run' } as const;

for (const dialect of DIALECTS) {
  dialect.describe(`a claim of a tick whose answer is lost, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let proxy: FaultProxy;
    let app: LockApp | undefined;
    let adminSource: DataSource;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      proxy = await startFaultProxy(db.url);
      adminSource = new DataSource(
        dialect.name === 'MariaDB' ? { type: 'mariadb', url: db.url, timezone: 'Z' } : { type: 'postgres', url: db.url },
      );
      await adminSource.initialize();
    });
    afterAll(async () => {
      await app?.close();
      await adminSource?.destroy();
      await proxy?.close();
      await db?.drop();
    });

    it('runs the tick it claimed (found under its own stamp), once, and records its success', async () => {
      runs.length = 0;
      app = await createLockApp(proxy.via(db.url), { appId: 'lost-claim', queryTimeoutMs: 2000 }, 6, [LostClaimJobs]);
      await until(async () => runs.length >= 1, 10_000);
      // The next claim commits; its answer is lost in a connection reset.
      await proxy.arm(CLAIM[dialect.name], 'reset-after-commit');
      await sleep(1500);
      await app.close();
      app = undefined;
      const history = await LockAdminService.create(adminSource).getJobRuns({ job: 'LostClaimJobs.run', limit: 100 });
      const claimed = history.filter((run) => run.outcome !== 'skipped');
      // Every claimed tick ran, once: none is left `abandoned` (claimed, never run).
      expect(claimed.map((run) => run.outcome)).toEqual(claimed.map(() => 'succeeded'));
      expect(claimed).toHaveLength(runs.length);
      expect(claimed.every((run) => run.appId === 'lost-claim' && run.skippedElsewhere === 0)).toBe(true);
    }, 30_000);
  });
}
