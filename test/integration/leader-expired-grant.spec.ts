import { jest } from '@jest/globals';
import { LeaderService, LockAdminService, type LockRoleLeader } from 'nestjs-db-locks';
import { LeaderTermStore } from '../../lib/store/leader-terms.store.js';
import { expireLeases } from '../support/dialect-sql.js';
import { DIALECTS } from '../support/dialects.js';
import { leadUntilTold, mostLeadersAtOnce, recordChanges } from '../support/leader-fleet.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

// Issue 50, item 1: a candidate's grant whose lease is already over in the database, but not reaped (every reaper off),
// must not win the election. Elected, its replica would believe it leads (its own clock says the lease runs) while the
// database says nobody does, and any reaper may free the role's lock for the next replica. The lease is ended by hand
// between the grant and its election (the one instant the election's own check of the lease protects).
for (const dialect of DIALECTS) dialect.describe(`leader election against an expired, unreaped grant on ${dialect.name}`, () => {
  let db: TestDatabase;
  const apps = trackApps((appId: string) => createLockApp(db.url, { appId, reaperIntervalMs: 0 }));

  beforeAll(async () => {
    db = await dialect.createDatabase();
  }, 60_000);
  afterEach(async () => {
    jest.restoreAllMocks();
    await apps.closeAll();
  });
  afterAll(() => db?.drop());

  it('a grant whose lease ended before its election is not elected; the replica leads only with a live grant, in the next term', async () => {
    const role = 'expired-grant';
    const [one, two] = [await apps.start('one'), await apps.start('two')];
    const leaders = [one, two].map((app) => app.app.get(LeaderService));
    const admin = one.app.get(LockAdminService);
    const told = recordChanges(leaders, role);
    leaders[0]!.campaign(role, leadUntilTold);
    await until(() => leaders[0]!.isLeader(role));
    const first = leaders[0]!.term(role)!.token;

    // The second replica's first grant of the role's lock has its lease ended in the database before it is elected.
    const terms = two.app.get(LeaderTermStore);
    const elect = terms.elect.bind(terms);
    const expired: number[] = [];
    jest.spyOn(terms, 'elect').mockImplementation(async (...args) => {
      if (expired.length === 0) {
        expired.push(args[1]);
        await expireLeases(db, dialect, args[1]);
      }
      return elect(...args);
    });
    // What the database said when the second replica began to believe it leads.
    const seen: Array<LockRoleLeader | null> = [];
    leaders[1]!.campaign(role, async (signal) => {
      seen.push((await admin.getLeaders({ role }))[0]?.leader ?? null);
      await leadUntilTold(signal);
    });
    await until(async () => (await admin.listWaiters({ name: `leader:${role}` })).length === 1);
    await leaders[0]!.resign(role);

    await until(() => seen.length > 0, 15_000);
    expect(expired).toHaveLength(1);
    expect(leaders[1]!.isLeader(role)).toBe(true);
    const leader = seen[0];
    expect(leader).toMatchObject({ appId: 'two', term: first + 1 });
    expect(leader!.stamp).not.toBe(expired[0]); // a later grant of its own, with a live lease
    expect(leader!.leaseLeftMs).toBeGreaterThan(0);
    expect(leaders[1]!.term(role)!.token).toBe(first + 1);
    expect(told.map((change) => `${change.app} ${change.leading} ${change.token - first}`)).toEqual(['0 true 0', '0 false 0', '1 true 1']);
    expect(mostLeadersAtOnce(told)).toBe(1);
  }, 30_000);
});
