import { DataSource } from 'typeorm';
import { LockAdminService } from 'nestjs-db-locks';
import { createJobRunStore } from '../../lib/store/lock-stores.factory.js';
import type { JobRunStore } from '../../lib/store/job-runs.store.js';
import { resolveLockOptions } from '../../lib/utils/resolve-lock-options.util.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

for (const dialect of DIALECTS) {
  dialect.describe(`claiming a tick in locking_job_run, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let dataSource: DataSource;
    let store: JobRunStore;
    let admin: LockAdminService;
    const tick = Date.UTC(2026, 0, 1, 2, 0, 0);

    beforeAll(async () => {
      db = await dialect.createDatabase();
      dataSource = new DataSource(
        dialect.name === 'MariaDB'
          ? { type: 'mariadb', url: db.url, timezone: 'Z', extra: { connectionLimit: 12 } }
          : { type: 'postgres', url: db.url, extra: { max: 12 } },
      );
      await dataSource.initialize();
      store = createJobRunStore(dataSource, resolveLockOptions({ appId: 'store-test' }));
      admin = LockAdminService.create(dataSource);
    });
    afterAll(async () => {
      await dataSource?.destroy();
      await db?.drop();
    });

    it('lets exactly one of many concurrent claims of a tick win, and counts the others', async () => {
      const claims = await Promise.all(
        Array.from({ length: 12 }, (_, i) => store.claim('Race.run', { at: tick }, `replica-${i}`, 1000 + i)),
      );
      expect(claims.filter((claim) => claim.result === 'claimed')).toHaveLength(1);
      expect(claims.filter((claim) => claim.result === 'elsewhere')).toHaveLength(11);
      expect(claims.every((claim) => claim.tick === tick)).toBe(true);
      const [run] = await admin.getJobRuns({ job: 'Race.run' });
      const winner = claims.findIndex((claim) => claim.result === 'claimed');
      // Its grant (stamp 1000 + i) is not in `locking`: read as abandoned, as a replica that died would be.
      expect(run).toMatchObject({ appId: `replica-${winner}`, stamp: 1000 + winner, skippedElsewhere: 11, outcome: 'abandoned' });
    });

    it('records a busy tick as skipped, lets a later replica take it over, and then counts latecomers', async () => {
      expect((await store.claim('Busy.run', { at: tick }, 'a', null)).result).toBe('busy');
      expect(await admin.getJobRuns({ job: 'Busy.run' })).toEqual([
        expect.objectContaining({ outcome: 'skipped', appId: null, stamp: null, startedAt: null, skippedBusy: 1 }),
      ]);
      expect((await store.claim('Busy.run', { at: tick }, 'b', 2001)).result).toBe('claimed');
      expect((await store.claim('Busy.run', { at: tick }, 'c', 2002)).result).toBe('elsewhere');
      expect((await store.claim('Busy.run', { at: tick }, 'd', null)).result).toBe('busy');
      await store.endRun('Busy.run', tick, 2001, { outcome: 'succeeded', error: null, durationMs: 12.4 });
      expect(await admin.getJobRuns({ job: 'Busy.run' })).toEqual([
        expect.objectContaining({ outcome: 'succeeded', appId: 'b', stamp: 2001, durationMs: 12, skippedBusy: 2, skippedElsewhere: 1 }),
      ]);
    });

    it('names an @Interval tick by the period of the database clock', async () => {
      const claim = await store.claim('Period.run', { periodMs: 5000 }, 'a', 3001);
      expect(claim.result).toBe('claimed');
      expect(claim.tick % 5000).toBe(0);
      expect(claim.dbNow - claim.tick).toBeGreaterThanOrEqual(0);
      expect(claim.dbNow - claim.tick).toBeLessThan(5000 + 1000);
    });

    it('claims a "run now" once: one of many concurrent claims wins, a later one finds it taken, none while a run goes', async () => {
      await store.touchJob({ job: 'Manual.run', schedule: 'every 1000 ms', nextTick: null }, false);
      const asked = await store.requestRun('Manual.run', 'alice', 'once');
      expect(asked).toMatchObject({ found: true, changed: true });
      // A tick no schedule names (not a whole second, not a multiple of the period).
      expect(asked.at % 1000).not.toBe(0);
      expect(await store.listRequests(['Manual.run', 'Other.run'])).toEqual([{ job: 'Manual.run', tick: asked.at }]);
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => store.claimRequest('Manual.run', asked.at, `replica-${i}`, 4000 + i)));
      expect(claims.filter((claim) => claim.result === 'claimed')).toHaveLength(1);
      const winner = 4000 + claims.findIndex((claim) => claim.result === 'claimed');
      await store.endRun('Manual.run', asked.at, winner, { outcome: 'succeeded', error: null, durationMs: 5 });
      // A replica that listed the request and got the job's locks only after the run ended: it does not run it again.
      expect((await store.claimRequest('Manual.run', asked.at, 'late', 4100)).result).toBe('elsewhere');
      expect(await store.listRequests(['Manual.run'])).toEqual([]);
      const [run] = await admin.getJobRuns({ job: 'Manual.run' });
      expect(run).toMatchObject({ outcome: 'succeeded', manual: true, actor: 'alice', reason: 'once', stamp: winner });

      // While a run of the job goes under a live grant, a request is busy and stays requested.
      const going = 4200;
      await db.query(
        dialect.name === 'MariaDB'
          ? "INSERT INTO locking (lock_name, mode, app_id, stamp, created) VALUES ('MANUAL', 'W', 'a', 4200, UTC_TIMESTAMP(6))"
          : "INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES ('MANUAL', 'W', 'a', 4200)",
      );
      expect((await store.claim('Manual.run', { at: tick }, 'a', going)).result).toBe('claimed');
      const second = await store.requestRun('Manual.run', 'bob', 'while it runs');
      expect((await store.claimRequest('Manual.run', second.at, 'b', 4201)).result).toBe('busy');
      expect(await store.listRequests(['Manual.run'])).toEqual([{ job: 'Manual.run', tick: second.at }]);
      await store.endRun('Manual.run', tick, going, { outcome: 'succeeded', error: null, durationMs: 5 });
      expect((await store.claimRequest('Manual.run', second.at, 'b', 4201)).result).toBe('claimed');
    });

    it('records a tick of a paused job paused (with who and why) instead of claiming it, until resumed', async () => {
      await store.touchJob({ job: 'Paused.run', schedule: 'cron * * * * * *', nextTick: null }, false);
      expect(await store.pauseJob('Paused.run', 'alice', 'maintenance')).toMatchObject({ found: true, changed: true });
      expect(await store.pauseJob('Paused.run', 'bob', 'again')).toMatchObject({ found: true, changed: false });
      const claims = await Promise.all(Array.from({ length: 4 }, (_, i) => store.claim('Paused.run', { at: tick }, `r-${i}`, 5000 + i)));
      expect(claims.every((claim) => claim.result === 'paused')).toBe(true);
      expect(await admin.getJobRuns({ job: 'Paused.run' })).toEqual([
        expect.objectContaining({ outcome: 'paused', appId: null, stamp: null, actor: 'alice', reason: 'maintenance', manual: false }),
      ]);
      // A paused job is never retired, whoever keeps it.
      expect(await store.retireJobs(0)).toBeGreaterThanOrEqual(0);
      expect((await store.listJobs()).find((job) => job.job === 'Paused.run')?.paused).toMatchObject({ actor: 'alice' });
      expect(await store.resumeJob('Paused.run', 'carol', 'done')).toMatchObject({ found: true, changed: true });
      expect((await store.claim('Paused.run', { at: tick + 1000 }, 'r-0', 5100)).result).toBe('claimed');
      expect(await store.pauseJob('Unknown.run', 'a', 'r')).toMatchObject({ found: false, changed: false });
      expect(await store.requestRun('Unknown.run', 'a', 'r')).toMatchObject({ found: false });
      expect((await store.listActions({ job: 'Paused.run', limit: 10 })).map((action) => action.action)).toEqual(['resume', 'pause']);
    });
  });
}
