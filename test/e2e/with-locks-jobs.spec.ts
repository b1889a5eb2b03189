import { Injectable } from '@nestjs/common';
import { Cron, Interval, SchedulerRegistry } from '@nestjs/schedule';
import { WithLocks } from 'nestjs-db-locks';
import { lockRows } from '../support/lock-rows.js';
import { createNestApp, type TestNestApp } from '../support/nest-app.js';
import { until } from '../support/until.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

/** Every run records whether its lock row was in the table while it ran. */
const runs = { cronAbove: [] as boolean[], cronBelow: [] as boolean[], interval: [] as boolean[] };
/** Runs that have started and not finished: the database must outlive them. */
let inFlight = 0;

async function heldByMe(name: string): Promise<boolean> {
  inFlight++;
  try {
    return (await lockRows(db)).some((row) => row.lock_name === name && row.app_id === 'ws1-jobs');
  } finally {
    inFlight--;
  }
}

@Injectable()
class Ws1Jobs {
  /** @Cron above @WithLocks. */
  @Cron('* * * * * *', { name: 'rebuild-above' })
  @WithLocks('WS1_WRITE')
  async rebuildAbove(): Promise<void> {
    runs.cronAbove.push(await heldByMe('WS1'));
  }

  /** @Cron below @WithLocks. */
  @WithLocks('WS2_WRITE', 'WS1X_READ')
  @Cron('* * * * * *', { name: 'rebuild-below' })
  async rebuildBelow(): Promise<void> {
    runs.cronBelow.push(await heldByMe('WS2'));
  }

  @Interval('sync-interval', 100)
  @WithLocks('SYNC_WRITE')
  async sync(): Promise<void> {
    runs.interval.push(await heldByMe('SYNC'));
  }
}


for (const dialect of DIALECTS) dialect.describe(`@WithLocks on scheduled jobs on ${dialect.name}`, () => {
  let jobs: TestNestApp;
  let other: TestNestApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    other = await createNestApp(db.url, { appId: 'ws1-other' });
    jobs = await createNestApp(db.url, { appId: 'ws1-jobs' }, { providers: [Ws1Jobs] });
  });
  afterAll(async () => {
    await jobs.close();
    await other.close();
    // A run that started before the close still reads the table: dropping the database under it would end it.
    await until(() => inFlight === 0);
    await db.drop();
  });

  it('keeps the schedule metadata in either decorator order', () => {
    const registry = jobs.app.get(SchedulerRegistry);
    expect([...registry.getCronJobs().keys()].sort()).toEqual(['rebuild-above', 'rebuild-below']);
    expect(registry.getIntervals()).toContain('sync-interval');
  });

  it('runs each job under its lock, in both decorator orders', async () => {
    await until(() => runs.cronAbove.length >= 1 && runs.cronBelow.length >= 1 && runs.interval.length >= 2);
    expect(runs.cronAbove.every(Boolean)).toBe(true);
    expect(runs.cronBelow.every(Boolean)).toBe(true);
    expect(runs.interval.every(Boolean)).toBe(true);
  });

  it('skips the runs while another instance holds the lock, and resumes after', async () => {
    // The jobs hold these locks while they run (the interval every 100 ms), so wait for a gap rather than try once.
    const stamp = await other.locks.tryLocks(['WS1_WRITE', 'WS2_READ', 'SYNC_READ'], { waitMs: 5000 });
    expect(stamp).toBeGreaterThan(0);
    // Every run records itself while it holds its lock, so none can record itself after this grant.
    const before = { above: runs.cronAbove.length, below: runs.cronBelow.length, interval: runs.interval.length };
    // Wait for evidence of refused runs, not for a time: the jobs are refused at most 12 times a second (the interval
    // every 100 ms, each cron job every second), so 25 refusals span more than 2 s, two ticks of each cron job.
    const refusedBefore = jobs.locks.getStats().busy;
    await until(() => jobs.locks.getStats().busy >= refusedBefore + 25, 30_000);
    expect(runs.cronAbove.length).toBe(before.above);
    expect(runs.cronBelow.length).toBe(before.below);
    expect(runs.interval.length).toBe(before.interval);
    await other.locks.releaseLocks(stamp);
    // Every job resumes, in whatever order: a cron tick right after the release can finish before the interval's
    // next tick has taken its lock, claimed its period and recorded itself (times out if one never resumes).
    await until(
      () =>
        runs.cronAbove.length > before.above && runs.cronBelow.length > before.below && runs.interval.length > before.interval,
    );
    expect(runs.cronAbove.every(Boolean) && runs.cronBelow.every(Boolean) && runs.interval.every(Boolean)).toBe(true);
  });
});
