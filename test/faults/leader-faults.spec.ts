import { LockAdminService } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { beatsOfDeposedLeaders, LeaderFleet, leadersAfter } from '../support/leader-fleet.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startResetProxy, type ResetProxy } from '../support/reset-proxy.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const ROLE = 'faults';
const LEASE_MS = 3000;
const REAPER_MS = 1000;

// Issue 40: a leader that cannot renew its grant (its network frozen) or that stops running (SIGSTOP past its lease)
// is told (its signal fires, `isLeader` turns false) before another replica is elected: counted from the replicas'
// own reports (test/support/leader-replica.child.mjs) on the machine's monotonic clock, with a heartbeat every 20 ms
// that says whether the replica believes it leads at that instant.
for (const dialect of DIALECTS) dialect.describe(`leader election through faults on ${dialect.name}`, () => {
  let db: TestDatabase;
  let observer: LockApp;
  let proxy: ResetProxy;
  let fleet: LeaderFleet;

  const waiters = async () =>
    (await observer.app.get(LockAdminService).listWaiters({ name: `leader:${ROLE}` })).map((w) => w.appId);

  beforeAll(async () => {
    db = await dialect.createDatabase();
    observer = await createLockApp(db.url, { appId: 'observer' });
    proxy = await startResetProxy(db.url);
    fleet = new LeaderFleet({
      DATABASE_URL: db.url,
      ROLE,
      LEASE_MS: String(LEASE_MS),
      REAPER_MS: String(REAPER_MS),
      HEARTBEAT_MS: '20',
    });
  }, 60_000);

  afterAll(async () => {
    await fleet?.closeAll();
    await proxy?.close();
    await observer?.close();
    await db?.drop();
  });

  it('tells a leader whose network froze before the next candidate is elected', async () => {
    await fleet.start('frozen', { DATABASE_URL: proxy.via(db.url) });
    await until(() => fleet.leader() === 'frozen', 20_000);
    await fleet.start('second');
    await fleet.start('third');
    await until(async () => (await waiters()).length === 2, 20_000);
    const from = fleet.events.length;
    const healed = proxy.freeze(LEASE_MS + REAPER_MS + 3000);
    const next = await fleet.next((e) => e.event === 'start' && e.app !== 'frozen', LEASE_MS + REAPER_MS + 10_000, from);
    const stop = await fleet.next((e) => e.app === 'frozen' && e.event === 'stop', 1000, from);
    expect(stop.reason).toBe('LockLostError');
    expect(stop.t).toBeLessThan(next.t);
    await healed;
    await until(async () => (await waiters()).includes('frozen'), 20_000); // it stands again once the database answers
    expect(leadersAfter(fleet.events).filter((entry) => entry.leaders.length > 1)).toEqual([]);
    expect(beatsOfDeposedLeaders(fleet.events)).toEqual([]);
  }, 60_000);

  it('tells a leader paused past its lease (SIGSTOP) before it acts again, while another was elected meanwhile', async () => {
    // The leader by its own heartbeats (a replica beats only while it believes it leads), once the start and stop
    // events agree: a CI run once paused a replica that the events alone named, while another one was beating.
    let paused = '';
    await until(() => {
      paused = fleet.events.filter((e) => e.event === 'beat').at(-1)?.app ?? '';
      return paused !== '' && fleet.leader() === paused;
    }, 10_000);
    const from = fleet.events.length;
    fleet.signal(paused, 'SIGSTOP');
    const next = await fleet.next((e) => e.event === 'start' && e.app !== paused, LEASE_MS + REAPER_MS + 10_000, from);
    fleet.signal(paused, 'SIGCONT');
    const stop = await fleet.next((e) => e.app === paused && e.event === 'stop', 5000, from);
    expect(stop.reason).toBe('LockLostError');
    await sleep(1000);
    // Its belief while it did not run is nobody's concern; once running, it never believed it led after `next`.
    expect(beatsOfDeposedLeaders(fleet.events)).toEqual([]);
    const starts = fleet.events.filter((e) => e.event === 'start').sort((a, b) => a.t - b.t);
    expect(starts.at(-1)).toEqual(next);
    starts.forEach((start, i) => i > 0 && expect(start.token).toBe(starts[i - 1]!.token! + 1));
  }, 60_000);
});
