import { Injectable } from '@nestjs/common';
import { Cron, Interval, SchedulerRegistry } from '@nestjs/schedule';
import { WithLocks } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { lockRows } from '../support/lock-rows.js';
import { createNestApp, type TestNestApp } from '../support/nest-app.js';
import { until } from '../support/until.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

/** Every run records whether its lock row was in the table while it ran. */
const runs = { cronAbove: [] as boolean[], cronBelow: [] as boolean[], interval: [] as boolean[] };

async function heldByMe(name: string): Promise<boolean> {
  return (await lockRows(db)).some((row) => row.lock_name === name && row.app_id === 'ws1-jobs');
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


describe('@WithLocks on scheduled jobs', () => {
  let jobs: TestNestApp;
  let other: TestNestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    other = await createNestApp(db.url, { appId: 'ws1-other' });
    jobs = await createNestApp(db.url, { appId: 'ws1-jobs' }, { providers: [Ws1Jobs] });
  });
  afterAll(async () => {
    await jobs.close();
    await other.close();
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
    await sleep(300); // let runs that started before the grant finish
    const before = { above: runs.cronAbove.length, below: runs.cronBelow.length, interval: runs.interval.length };
    await sleep(2300); // two cron ticks, many interval ticks
    expect(runs.cronAbove.length).toBe(before.above);
    expect(runs.cronBelow.length).toBe(before.below);
    expect(runs.interval.length).toBe(before.interval);
    await other.locks.releaseLocks(stamp);
    await until(() => runs.cronAbove.length > before.above && runs.cronBelow.length > before.below);
    expect(runs.interval.length).toBeGreaterThan(before.interval);
  });
});
