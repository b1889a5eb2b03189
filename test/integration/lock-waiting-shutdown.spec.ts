import { fileURLToPath } from 'node:url';
import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { LockShutdownError, WithLocks } from 'nestjs-db-locks';
import { Gate } from '../support/gate.js';
import { startHolder } from '../support/holder-process.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const WAITER_SCRIPT = fileURLToPath(new URL('../support/waiter.child.mjs', import.meta.url));

/** Holds the job inside its locked method until the test lets it out. */
const jobGate = new Gate();

@Injectable()
class GatedJob {
  @Interval('gated-job', 20)
  @WithLocks('GATED_WRITE')
  async run(): Promise<void> {
    await jobGate.pass();
  }
}

for (const dialect of DIALECTS) dialect.describe(`shutting down while waiting for locks on ${dialect.name}`, () => {
  let db: TestDatabase;
  let holder: LockApp;
  const waiterRows = (appId: string) => db.query('SELECT * FROM locking_waiters WHERE app_id = $1', [appId]);

  beforeAll(async () => {
    db = await dialect.createDatabase();
    holder = await createLockApp(db.url, { appId: 'holder' });
  });
  afterAll(async () => {
    await holder.close();
    await db.drop();
  });

  // The scheduler stops its intervals, and TypeORM destroys the DataSource, in the last phases of app.close(): a
  // locked call still running there could not release, and its lock stayed until its lease expired.
  it('app.close() lets the locked calls under way finish and release before the DataSource closes', async () => {
    jobGate.reset(); // the other dialect's run opened it
    const jobs = await createLockApp(db.url, { appId: 'gated-jobs' }, 4, [GatedJob]);
    await jobGate.reached();
    let closed = false;
    const closing = jobs.close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(closed).toBe(false); // close() waits for the call in flight
    // Meanwhile no new grant starts (the scheduler's next tick, or any caller): it would not be awaited.
    await expect(jobs.locks.tryLocks(['LATE_WRITE'])).rejects.toBeInstanceOf(LockShutdownError);
    expect(await db.query(`SELECT * FROM locking WHERE lock_name = 'LATE'`)).toEqual([]);
    jobGate.open();
    await closing;
    expect(await db.query(`SELECT * FROM locking WHERE app_id = 'gated-jobs'`)).toEqual([]);
    const log = await db.query<{ status: string }>(`SELECT status FROM locking_log WHERE app_id = 'gated-jobs'`);
    expect(log.length).toBeGreaterThan(0);
    expect(log.every((row) => row.status === 'RELEASED')).toBe(true);
  });

  it('app.close() ends every wait at once with LockShutdownError and removes its waiter rows', async () => {
    const stamp = await holder.locks.tryLocks(['S_WRITE']);
    const closing = await createLockApp(db.url, { appId: 'closing', waitRecheckMs: 60_000 });
    const outcomes: unknown[] = [];
    const waits = [
      closing.locks.tryLocks(['S_WRITE'], { waitMs: 600_000 }),
      closing.locks.tryLocks(['S_READ', 'T_WRITE'], { waitMs: 600_000 }),
    ].map((wait) => wait.then((value) => outcomes.push(value), (error: unknown) => outcomes.push(error)));
    await until(async () => (await waiterRows('closing')).length === 3);
    await closing.close();
    expect(outcomes).toHaveLength(2); // settled before close() returned
    for (const outcome of outcomes) expect(outcome).toBeInstanceOf(LockShutdownError);
    expect(await waiterRows('closing')).toEqual([]);
    await Promise.all(waits);
    await holder.locks.releaseLocks(stamp);
  });

  it('keeps nothing alive: the process of a closed application exits by itself', async () => {
    const stamp = await holder.locks.tryLocks(['P_WRITE']);
    const child = startHolder({ DATABASE_URL: db.url, APP_ID: 'child-waiter', LOCKS: 'P_WRITE' }, WAITER_SCRIPT);
    const exited = new Promise<number | null>((resolve) => child.child.once('exit', resolve));
    try {
      await child.next('started');
      await until(async () => (await waiterRows('child-waiter')).length === 1, 20_000);
      child.send('close');
      expect(await child.next('closed')).toMatchObject({ wait: 'LockShutdownError' });
      // Its re-check (60 s) and its wait (600 s) would keep it alive far beyond this bound.
      let bound: NodeJS.Timeout | undefined;
      const timedOut = new Promise<string>((resolve) => (bound = setTimeout(() => resolve('still running'), 15_000)));
      expect(await Promise.race([exited, timedOut])).toBe(0);
      clearTimeout(bound);
      expect(await waiterRows('child-waiter')).toEqual([]);
    } finally {
      if (child.child.exitCode === null) await child.kill();
      await holder.locks.releaseLocks(stamp);
    }
  });
});
