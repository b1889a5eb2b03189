import { DataSource } from 'typeorm';
import { LockAdminService } from 'nestjs-db-locks';
import { createJobRunStore } from '../../lib/store/lock-stores.factory.js';
import type { JobRunStore } from '../../lib/store/job-runs.store.js';
import { resolveLockOptions } from '../../lib/utils/resolve-lock-options.util.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

/** The store methods of issue 36: the pre-check of a tick (`checkTick`) and the late end (`endRunLate`). */
for (const dialect of DIALECTS) {
  dialect.describe(`pre-checking a tick and writing an end late, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let dataSource: DataSource;
    let store: JobRunStore;
    let admin: LockAdminService;
    const tick = Date.UTC(2026, 0, 1, 3, 0, 0);

    beforeAll(async () => {
      db = await dialect.createDatabase();
      const options = dialect.name === 'MariaDB' ? ({ type: 'mariadb', timezone: 'Z' } as const) : ({ type: 'postgres' } as const);
      dataSource = await new DataSource({ ...options, url: db.url }).initialize();
      [store, admin] = [createJobRunStore(dataSource, resolveLockOptions({ appId: 'late-test' })), LockAdminService.create(dataSource)];
    });
    afterAll(() => dataSource?.destroy().then(() => db.drop()));

    it('finds an open tick open (a busy one too), a claimed one taken, and counts the replica that found it taken', async () => {
      expect(await store.checkTick('Check.run', { at: tick })).toMatchObject({ tick, taken: false });
      await store.claim('Check.run', { at: tick }, 'a', null); // busy: left `skipped`, still open
      expect((await store.checkTick('Check.run', { at: tick })).taken).toBe(false);
      expect((await store.claim('Check.run', { at: tick }, 'b', 3001)).result).toBe('claimed');
      const check = await store.checkTick('Check.run', { at: tick });
      expect(check).toMatchObject({ tick, taken: true });
      expect(Math.abs(check.dbNow - Date.now())).toBeLessThan(5000);
      const [run] = await admin.getJobRuns({ job: 'Check.run' });
      expect(run).toMatchObject({ appId: 'b', skippedBusy: 1, skippedElsewhere: 1 });
    });

    it('names an @Interval tick by the period of the database clock, as the claim does', async () => {
      const check = await store.checkTick('CheckPeriod.run', { periodMs: 60_000 });
      expect(check.tick % 60_000).toBe(0);
      expect(check.dbNow - check.tick).toBeGreaterThanOrEqual(0);
      expect(check.dbNow - check.tick).toBeLessThan(60_000);
      const claim = await store.claim('CheckPeriod.run', { periodMs: 60_000 }, 'a', 3002);
      if (claim.tick === check.tick) expect((await store.checkTick('CheckPeriod.run', { periodMs: 60_000 })).taken).toBe(true);
    });

    it('writes an end late by (job, tick, stamp), dates the success at the run end, and never moves it back', async () => {
      await store.claim('Late.run', { at: tick }, 'a', 3003);
      await store.endRunLate('Late.run', 'cron 0 0 3 * * *', tick, 3003, { outcome: 'succeeded', error: null, durationMs: 40.2 }, 10_000);
      const [run] = await admin.getJobRuns({ job: 'Late.run' });
      expect(run).toMatchObject({ outcome: 'succeeded', durationMs: 40, stamp: 3003 });
      const job = async () => (await admin.getJobs({ runs: 0 })).find((candidate) => candidate.job === 'Late.run')!;
      const first = await job();
      expect(first.lastSucceededAgeSeconds).toBeGreaterThanOrEqual(9.5);
      expect(first.lastSucceededAgeSeconds).toBeLessThan(15);
      // An older end written later does not move the last success back.
      await store.claim('Late.run', { at: tick - 60_000 }, 'a', 3004);
      await store.endRunLate('Late.run', 'cron 0 0 3 * * *', tick - 60_000, 3004, { outcome: 'succeeded', error: null, durationMs: 5 }, 60_000);
      expect((await job()).lastSucceededAt).toEqual(first.lastSucceededAt);
      // A failure written late records no success.
      await store.claim('LateFail.run', { at: tick }, 'a', 3005);
      await store.endRunLate('LateFail.run', 'cron 0 0 3 * * *', tick, 3005, { outcome: 'failed', error: 'RangeError', durationMs: 5 }, 0);
      expect((await admin.getJobRuns({ job: 'LateFail.run' }))[0]).toMatchObject({ outcome: 'failed', error: 'RangeError' });
      expect((await admin.getJobs({ runs: 0 })).find((candidate) => candidate.job === 'LateFail.run')).toMatchObject({ lastSucceededAt: null });
    });
  });
}
