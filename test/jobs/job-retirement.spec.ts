import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { setTimeout as sleep } from 'node:timers/promises';
import { WithLocks } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { type InMemorySdk, registerInMemorySdk } from '../support/otel-sdk.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const AGE = 'nestjs_db_locks.job.last_success.age';
/** Pod names, as the README advises for `appId`: each deploy brings new ones. */
const GONE = 'web-7f9c8d-x2kq9';
const LIVE = 'web-7f9c8d-p8zt4';
/** Both replicas' settings: a short retention, and the reaper (where the history is pruned) often. */
const OPTIONS = { logRetentionMs: 1500, reaperIntervalMs: 300 };
/** How long a job no live replica keeps is kept: max(logRetentionMs, 3 reaper intervals). */
const RETIRED_AFTER_MS = 1500;

@Injectable()
class PodJobs {
  @Cron('* * * * * *')
  @WithLocks({ locks: ['POD_CACHE_WRITE'], scheduledRuns: 'per-replica' })
  async warm(): Promise<void> {}
}

@Injectable()
class MonthlyJobs {
  /** Once a month: registered, and not due while the test runs. */
  @Cron('0 0 3 1 * *')
  @WithLocks('MONTHLY_REPORT_WRITE')
  async report(): Promise<void> {}
}

for (const dialect of DIALECTS) dialect.describe(`jobs of replicas that are gone, on ${dialect.name}`, () => {
  let db: TestDatabase;
  let sdk: InMemorySdk;
  const apps: LockApp[] = [];
  const jobs = async (): Promise<string[]> => (await db.query<{ job: string }>('SELECT job FROM locking_job ORDER BY job')).map((row) => row.job);
  /** The jobs of the live replica's "last success age" series. */
  const series = async (): Promise<string[]> =>
    ((await sdk.collect()).get(AGE) ?? []).filter((point) => point.attributes['app.id'] === LIVE).map((point) => String(point.attributes.job));

  beforeAll(async () => {
    // Delta: each collection shows the series the gauge observed since the last one (under cumulative temporality,
    // this SDK would re-export the last point of a series no longer observed).
    sdk = registerInMemorySdk(AggregationTemporality.DELTA);
    db = await dialect.createDatabase();
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await db.drop();
    await sdk.shutdown();
  });

  it("retires a gone replica's own jobs and their gauge series, and keeps the live replica's and the fleet's", async () => {
    const gone = await createLockApp(db.url, { appId: GONE, ...OPTIONS }, 4, [PodJobs, MonthlyJobs]);
    apps.push(await createLockApp(db.url, { appId: LIVE, ...OPTIONS }, 4, [PodJobs, MonthlyJobs]));
    // Each replica's per-replica job has succeeded, and the live replica reports both in its gauge.
    await until(async () => (await series()).includes(`PodJobs.warm@${GONE}`) && (await series()).includes(`PodJobs.warm@${LIVE}`), 15_000);
    expect(await jobs()).toEqual([`MonthlyJobs.report`, `PodJobs.warm@${LIVE}`, `PodJobs.warm@${GONE}`].sort());
    await gone.close(); // the pod is gone: a deploy replaced it

    await until(async () => !(await jobs()).includes(`PodJobs.warm@${GONE}`), 10_000);
    await until(async () => !(await series()).includes(`PodJobs.warm@${GONE}`), 5_000);
    // The live replica's jobs stay, the monthly job too (registered, never run here), however long it lasts.
    await sleep(3 * RETIRED_AFTER_MS);
    expect(await jobs()).toEqual([`MonthlyJobs.report`, `PodJobs.warm@${LIVE}`]);
    expect(await series()).toEqual([`PodJobs.warm@${LIVE}`]);
  }, 40_000);
});
