import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { beatsOfDeposedLeaders, type FleetEvent, LeaderFleet, leadersAfter } from '../support/leader-fleet.js';
import type { RestartableServer } from '../support/restartable-server.js';
import { until } from '../support/until.js';

const ROLE = 'restarts';
const LEASE_MS = 3000;

// Issue 40: leader election through a crash of the database longer than the lease (PostgreSQL's immediate shutdown,
// MariaDB's SIGKILL; then recovery from the log): the leader is told before anybody is elected again, a leader is
// elected once the server is back, and the terms, kept in the database, go on growing from where they were.
for (const dialect of DIALECTS) dialect.describeRestartable(`leader election through a database crash on ${dialect.name}`, () => {
  let server: RestartableServer;
  let fleet: LeaderFleet;

  beforeAll(async () => {
    server = await dialect.startRestartable();
    fleet = new LeaderFleet({ DATABASE_URL: server.url, ROLE, LEASE_MS: String(LEASE_MS), REAPER_MS: '1000', HEARTBEAT_MS: '20' });
    await fleet.start('replica-1');
    await until(() => fleet.leader() === 'replica-1', 20_000);
    await fleet.start('replica-2');
    await fleet.start('replica-3');
  }, 120_000);

  afterAll(async () => {
    await fleet?.closeAll();
    await server?.destroy();
  });

  const starts = () => fleet.events.filter((e): e is FleetEvent & { token: number } => e.event === 'start').sort((a, b) => a.t - b.t);

  it('tells the leader before anybody is elected again, elects one once the server is back, and the tokens go on growing', async () => {
    const before = starts().at(-1)!;
    const from = fleet.events.length;
    await server.crash();
    await sleep(LEASE_MS + 1000);
    await server.start();
    const next = await fleet.next((e) => e.event === 'start', 30_000, from);
    const stop = await fleet.next((e) => e.app === before.app && e.event === 'stop', 1000, from);
    expect(stop.reason).toBe('LockLostError');
    expect(stop.t).toBeLessThan(next.t);
    expect(next.token).toBeGreaterThan(before.token);

    // An election after the crash: the term recorded before the crash is the base of the next. (Whoever wins it: the
    // others may not be back in the queue yet, and the one that resigned stands again at once.)
    const after = fleet.events.length;
    fleet.send(next.app, 'resign');
    const third = await fleet.next((e) => e.event === 'start', 20_000, after);
    expect(third.token).toBe(next.token! + 1);
    await sleep(500);
    expect(leadersAfter(fleet.events).filter((entry) => entry.leaders.length > 1)).toEqual([]);
    expect(beatsOfDeposedLeaders(fleet.events)).toEqual([]);
    const tokens = starts().map((s) => s.token);
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(tokens.length);
  }, 120_000);
});
