import { LockAdminService } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { type FleetEvent, LeaderFleet, leadersAfter, quantile } from '../support/leader-fleet.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const ROLE = 'replicas';
const LEASE_MS = 3000;
const REAPER_MS = 1000;
/** How long each leader's work goes on after its signal fired (it still leads the role meanwhile). */
const FINISH_MS = 100;
/** Hand-overs by resign (enough for a median and a 99th percentile). */
const RESIGN_ROUNDS = 60;

// Issue 40: leader election from the leaders' side, with real replica processes (test/support/leader-replica.child.mjs)
// on both dialects. Every replica reports when it starts and stops believing it leads, on the machine's monotonic
// clock; the spec counts, at every instant, how many replicas believed they led (never two), checks the candidates'
// order and the tokens across terms, and measures the hand-overs: resign and SIGTERM (woken by the database: the
// replicas' re-check is 60 s) and kill -9 (within the lease plus the reaper's period).
for (const dialect of DIALECTS) dialect.describe(`leader election across replica processes on ${dialect.name}`, () => {
  let db: TestDatabase;
  let observer: LockApp;
  let fleet: LeaderFleet;
  /** The candidates in the order they wait, the leader excluded. */
  let queue: string[] = [];
  let replicas = 0;
  const handOvers: Record<'resign' | 'sigterm' | 'kill', number[]> = { resign: [], sigterm: [], kill: [] };

  const waiters = async () =>
    (await observer.app.get(LockAdminService).listWaiters({ name: `leader:${ROLE}` })).map((w) => w.appId);

  /** Starts a new replica and waits until it leads or waits behind the others. */
  const join = async (): Promise<string> => {
    const app = `replica-${++replicas}`;
    await fleet.start(app);
    // A first replica is a waiter too, for a moment, before it is elected: a candidate waits behind a leader.
    await until(async () => {
      const leader = fleet.leader();
      return leader === app || (leader !== undefined && (await waiters()).includes(app));
    }, 20_000);
    if (fleet.leader() !== app) queue.push(app);
    return app;
  };

  /** The next `start` from index `from` on, of another replica than `leader`. */
  const nextStart = (from: number, leader: string, timeoutMs?: number) =>
    fleet.next((e) => e.event === 'start' && e.app !== leader, timeoutMs, from);

  beforeAll(async () => {
    db = await dialect.createDatabase();
    observer = await createLockApp(db.url, { appId: 'observer' });
    fleet = new LeaderFleet({
      DATABASE_URL: db.url,
      ROLE,
      LEASE_MS: String(LEASE_MS),
      REAPER_MS: String(REAPER_MS),
      FINISH_MS: String(FINISH_MS),
    });
    await join();
    await until(() => fleet.leader() === 'replica-1', 20_000);
    await join();
    await join();
    expect(await waiters()).toEqual(['replica-2', 'replica-3']);
  }, 120_000);

  afterAll(async () => {
    await fleet?.closeAll();
    await observer?.close();
    await db?.drop();
    const line = (name: string, values: number[]) =>
      values.length === 0
        ? `${name}: none`
        : `${name}: n=${values.length} median=${quantile(values, 0.5).toFixed(1)} ms p99=${quantile(values, 0.99).toFixed(1)} ms max=${Math.max(...values).toFixed(1)} ms`;
    process.stdout.write(
      `leader hand-over on ${dialect.name}: ${line('resign', handOvers.resign)}; ${line('SIGTERM', handOvers.sigterm)}; ` +
        `${line('kill -9', handOvers.kill)}\n`,
    );
  });

  it('hands over on resign to the candidate that waited longest, within milliseconds, woken by the database', async () => {
    for (let round = 0; round < RESIGN_ROUNDS; round++) {
      const leader = fleet.leader()!;
      const from = fleet.events.length;
      fleet.send(leader, 'resign');
      const next = await nextStart(from, leader);
      expect(next.app).toBe(queue.shift());
      const finished = await fleet.next((e) => e.app === leader && e.event === 'finished', 5000, from);
      expect(next.t).toBeGreaterThan(finished.t); // the old leader's work had ended
      handOvers.resign.push(next.t - finished.t);
      await fleet.next((e) => e.app === leader && e.event === 'resigned', 5000, from);
      await until(async () => (await waiters()).includes(leader), 10_000); // it stood again, at the back
      queue.push(leader);
    }
    expect(Math.max(...handOvers.resign)).toBeLessThan(1000); // the re-check is 60 s: only the database wakes them
  }, 120_000);

  it('hands over on SIGTERM once the leader\'s work has ended, to the candidate that waited longest', async () => {
    for (let round = 0; round < 5; round++) {
      const leader = fleet.leader()!;
      const from = fleet.events.length;
      await fleet.terminate(leader);
      const next = await nextStart(from, leader);
      expect(next.app).toBe(queue.shift());
      const stop = await fleet.next((e) => e.app === leader && e.event === 'stop', 1000, from);
      const finished = await fleet.next((e) => e.app === leader && e.event === 'finished', 1000, from);
      expect(stop.reason).toBe('LockShutdownError');
      expect(finished.t - stop.t).toBeGreaterThanOrEqual(FINISH_MS - 1); // its work was awaited...
      expect(next.t).toBeGreaterThan(finished.t); // ...before the role was handed over
      handOvers.sigterm.push(next.t - finished.t);
      await join();
    }
    expect(Math.max(...handOvers.sigterm)).toBeLessThan(1000);
  }, 180_000);

  it('hands over within the lease plus the reaper\'s period after kill -9', async () => {
    for (let round = 0; round < 3; round++) {
      const leader = fleet.leader()!;
      const from = fleet.events.length;
      const killedAt = await fleet.kill(leader);
      const next = await nextStart(from, leader, LEASE_MS + REAPER_MS + 10_000);
      expect(next.app).toBe(queue.shift());
      handOvers.kill.push(next.t - killedAt);
      // The lease runs from the last renewal, at most LEASE_MS before the kill; the reaper runs every REAPER_MS.
      expect(next.t - killedAt).toBeLessThan(LEASE_MS + REAPER_MS + 1000);
      await join();
    }
  }, 180_000);

  it('never had two replicas believing they led at once, and every term\'s token is one more than the last', () => {
    const timeline = leadersAfter(fleet.events);
    const overlaps = timeline.filter((entry) => entry.leaders.length > 1);
    expect(overlaps).toEqual([]);
    const starts = fleet.events.filter((e): e is FleetEvent & { token: number } => e.event === 'start').sort((a, b) => a.t - b.t);
    expect(starts.length).toBe(1 + RESIGN_ROUNDS + 5 + 3);
    starts.forEach((start, i) => i > 0 && expect(start.token).toBe(starts[i - 1]!.token + 1));
    expect(fleet.events.filter((e) => e.event === 'log' && e.level === 'error')).toEqual([]);
    // Nor did a replica that shut down warn about its candidacy or its work.
    expect(fleet.events.filter((e) => e.event === 'log' && /could not stand|still runs|refused/.test(e.message ?? ''))).toEqual([]);
  });
});
