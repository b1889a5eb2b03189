import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';

/**
 * A live grant is renewed at every tick whatever the reapers of the fleet do (issue 49): a reaper's scan for stale
 * grants must never hold a live grant's row at the moment its holder renews it, or the renewal skips it (a row another
 * transaction has locked is skipped, not waited for) and, skipped twice in a row, the grant is lost. The holder's side
 * is the judge: every grant is still held and its signal quiet after many leases, with reapers running at the
 * renewal's period on every instance.
 */
for (const dialect of DIALECTS) {
  dialect.describe(`Lease renewals beside busy reapers (${dialect.name})`, () => {
    let db: TestDatabase;
    const apps: LockApp[] = [];

    beforeAll(async () => {
      db = await dialect.createDatabase();
    });
    afterAll(async () => {
      for (const app of apps) await app.close().catch(() => undefined);
      await db?.drop();
    });

    it('keeps every idle grant through 8 leases while four instances reap at the renewal period', async () => {
      // leaseMs 600 with renewals and reapers every 200 ms: the options' own rule (renewIntervalMs < leaseMs).
      const options = { leaseMs: 600, renewIntervalMs: 200, reaperIntervalMs: 200 };
      const holder = await createLockApp(db.url, { appId: 'holder', ...options });
      apps.push(holder);
      for (let i = 0; i < 3; i++) apps.push(await createLockApp(db.url, { appId: `reaper-${i}`, ...options }));
      const stamps: number[] = [];
      for (let i = 0; i < 25; i++) stamps.push(await holder.locks.tryLocks([`IDLE:${i}_WRITE`]));
      expect(stamps.every((stamp) => stamp > 0)).toBe(true);
      const signals = stamps.map((stamp) => holder.locks.getSignal(stamp));

      // Beside the scheduled reapers, every instance reaps back to back: a scan at every moment of every renewal.
      let reaping = true;
      const reapers = apps.map(async (app) => {
        while (reaping) await app.locks.reapStaleLocks().catch(() => 0);
      });
      await sleep(8 * options.leaseMs);
      reaping = false;
      await Promise.all(reapers);

      const lost = stamps.filter((stamp, i) => signals[i]!.aborted || !holder.locks.isHeld(stamp));
      expect(lost).toEqual([]);
      for (const stamp of stamps) await holder.locks.releaseLocks(stamp);
    });
  });
}
