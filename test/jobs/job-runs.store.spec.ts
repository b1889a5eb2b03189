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
  });
}
