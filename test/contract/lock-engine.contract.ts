import { setTimeout as sleep } from 'node:timers/promises';
import {
  AppIdInUseError,
  IllegalMonitorStateError,
  LockAdminService,
  LockUpgradeError,
  type LockPermits,
  type LockRequest,
} from 'nestjs-db-locks';
import { GrantChecker } from '../support/grant-checker.js';
import { trackApps, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import { attemptRandomGroup } from '../support/lock-property.harness.js';
import { until } from '../support/until.js';

/** One shared store of locks (a database, or in-memory tables) that instances start on. */
export interface EngineStore {
  /** Starts an instance (`appId`, its own pool or module) on the store. */
  start(options: TestLockOptions): Promise<LockApp>;
  drop(): Promise<void>;
}

/** A store the contract runs on. */
export interface EngineTarget {
  readonly name: string;
  /** `describe`, or `describe.skip` when this run has no such store. */
  readonly describe: jest.Describe;
  /** Opens a fresh store. */
  open(): Promise<EngineStore>;
}

/** How long a waiter's own re-check timer waits: a grant well before it came from a wake-up. */
const RECHECK_MS = 10_000;

/**
 * The instances here run no reaper task: the tests reap with `reapStaleLocks()` and count what it freed. A reaper task
 * (every 10 s by default) of an instance started more than 10 s earlier, on a loaded machine, freed the expired grant
 * first, and the explicit reap found nothing (CI, stop 45).
 */
const NO_REAPER = 0;

/**
 * The lock engine's contract, through the public API only (`LockService`, `LockAdminService`), so that the same
 * assertions hold on PostgreSQL, MariaDB and the in-memory store of `LockTestingModule`: groups all or nothing,
 * modes and permits, writer preference in waiting order, wake-ups, leases, the reaper, forced release and its log,
 * recovery, re-entrancy, one live instance per app id, and a concurrency property with real concurrent callers.
 * Every test uses names of its own, so the store is shared by the whole file.
 */
export function describeLockEngineContract(target: EngineTarget): void {
  target.describe(`the lock engine's contract on ${target.name}`, () => {
    let store: EngineStore;
    const apps = trackApps((options: TestLockOptions) => store.start(options));
    let one: LockApp;
    let two: LockApp;
    let test = 0;
    /** A name of this test's own. */
    const name = (base: string) => `${base}${test}`;
    const admin = (app: LockApp) => app.app.get(LockAdminService);

    beforeAll(async () => {
      store = await target.open();
    });
    beforeEach(async () => {
      test++;
      one = await apps.start({ appId: 'one', waitRecheckMs: RECHECK_MS, reaperIntervalMs: NO_REAPER });
      two = await apps.start({ appId: 'two', waitRecheckMs: RECHECK_MS, reaperIntervalMs: NO_REAPER });
    });
    afterEach(() => apps.closeAll());
    afterAll(() => store?.drop());

    it('grants a whole group or nothing, with stamps that only grow', async () => {
      const [a, b, c] = [name('A'), name('B'), name('C')];
      const first = await one.locks.tryLocks([{ name: a, mode: 'write' }, { name: b, mode: 'read' }]);
      expect(first).toBeGreaterThan(0);
      // A is write-held: nothing of the group is taken, C included.
      expect(await two.locks.tryLocks([{ name: c, mode: 'write' }, { name: a, mode: 'read' }])).toBe(0);
      expect((await two.locks.getGrants({ name: c })).length).toBe(0);
      const second = await two.locks.tryLocks([{ name: c, mode: 'write' }]);
      expect(second).toBeGreaterThan(first);
      const grants = await admin(one).getGrants({ name: a });
      expect(grants.map((g) => [g.stamp, g.appId, g.locks])).toEqual([
        [first, 'one', [{ name: a, mode: 'write' }, { name: b, mode: 'read' }]],
      ]);
      expect(grants[0]!.fencingToken).toBe(first);
      await one.locks.releaseLocks(first);
      await two.locks.releaseLocks(second);
      const third = await one.locks.tryLocks([{ name: a, mode: 'read' }]);
      expect(third).toBeGreaterThan(second);
      await one.locks.releaseLocks(third);
      const log = await admin(two).getLog({ name: a });
      expect(log.map((entry) => [entry.stamp, entry.status])).toEqual([
        [third, 'RELEASED'],
        [first, 'RELEASED'],
      ]);
    });

    it('keeps readers and writers apart, and counts holders per name and mode against permits read at each grant', async () => {
      const p = name('P');
      const w = await one.locks.tryLocks([{ name: p, mode: 'write' }]);
      expect(await two.locks.tryLocks([{ name: p, mode: 'read' }])).toBe(0);
      expect(await two.locks.tryLocks([{ name: p, mode: 'write' }])).toBe(0); // write permits 1 (default)
      await one.locks.releaseLocks(w);
      await admin(one).setPermits(p, 'read', 2);
      const r1 = await one.locks.tryLocks([{ name: p, mode: 'read' }]);
      const r2 = await two.locks.tryLocks([{ name: p, mode: 'read' }]);
      expect([r1 > 0, r2 > 0]).toEqual([true, true]);
      expect(await two.locks.tryLocks([{ name: p, mode: 'read' }])).toBe(0); // a third reader
      expect(await two.locks.tryLocks([{ name: p, mode: 'write' }])).toBe(0); // readers hold it
      // Raised by another instance: the grant obeys it at once, whatever this instance's cache says.
      await admin(two).setPermits(p, 'read', 3);
      const r3 = await one.locks.tryLocks([{ name: p, mode: 'read' }]);
      expect(r3).toBeGreaterThan(0);
      for (const stamp of [r1, r3]) await one.locks.releaseLocks(stamp);
      await two.locks.releaseLocks(r2);
      await admin(one).setPermits(p, 'write', 2);
      const w1 = await one.locks.tryLocks([{ name: p, mode: 'write' }]);
      const w2 = await two.locks.tryLocks([{ name: p, mode: 'write' }]);
      expect([w1 > 0, w2 > 0]).toEqual([true, true]);
      expect(await admin(one).getPermits()).toEqual(
        expect.arrayContaining([
          { name: p, mode: 'read', permits: 3 },
          { name: p, mode: 'write', permits: 2 },
        ]),
      );
    });

    it('makes a reader yield to a waiting writer, and wakes the writer at the release, well before its re-check', async () => {
      const p = name('W');
      await admin(one).setPermits(p, 'read', 2);
      const read = await one.locks.tryLocks([{ name: p, mode: 'read' }]);
      const waiting = two.locks.tryLocks([{ name: p, mode: 'write' }], { waitMs: 30_000 });
      await until(async () => (await admin(one).listWaiters({ name: p })).length === 1);
      // Read permits 2 and one reader: free, but a writer waits.
      expect(await one.locks.tryLocks([{ name: p, mode: 'read' }])).toBe(0);
      const releasedAt = Date.now();
      await one.locks.releaseLocks(read);
      const stamp = await waiting;
      expect(stamp).toBeGreaterThan(read);
      expect(Date.now() - releasedAt).toBeLessThan(RECHECK_MS / 2);
      expect(await admin(one).listWaiters({ name: p })).toEqual([]); // the grant removed its rows
      await two.locks.releaseLocks(stamp);
    });

    it('serves waiters in registration order: a reader never overtakes a writer that waited before it', async () => {
      const o = name('O');
      const held = await one.locks.tryLocks([{ name: o, mode: 'write' }]);
      const order: string[] = [];
      const writer = two.locks.tryLocks([{ name: o, mode: 'write' }], { waitMs: 30_000 }).then((s) => (order.push('writer'), s));
      await until(async () => (await admin(one).listWaiters({ name: o })).length === 1);
      const reader = one.locks.tryLocks([{ name: o, mode: 'read' }], { waitMs: 30_000 }).then((s) => (order.push('reader'), s));
      await until(async () => (await admin(one).listWaiters({ name: o })).length === 2);
      const waiters = await admin(two).listWaiters({ name: o });
      expect(waiters.map((w) => [w.appId, w.locks[0]!.mode])).toEqual([
        ['two', 'write'],
        ['one', 'read'],
      ]);
      expect(waiters[0]!.position).toBeLessThan(waiters[1]!.position);
      await one.locks.releaseLocks(held);
      const w = await writer;
      await sleep(300); // the reader was woken too: it must still yield
      expect(order).toEqual(['writer']);
      await two.locks.releaseLocks(w);
      const r = await reader;
      expect(order).toEqual(['writer', 'reader']);
      expect(r).toBeGreaterThan(w);
      await one.locks.releaseLocks(r);
    });

    it('yields only to an earlier waiter that could be served: holding X, a wait for a free Y behind [X, Y] is granted', async () => {
      const [x, y] = [name('HX'), name('HY')];
      const held = await one.locks.tryLocks([{ name: x, mode: 'write' }]);
      const group = two.locks.tryLocks([{ name: x, mode: 'write' }, { name: y, mode: 'write' }], { waitMs: 30_000 });
      group.catch(() => undefined); // if the test fails first, the close of its instance ends this wait
      await until(async () => (await admin(one).listWaiters({ name: y })).length === 1);
      // The waiter of [X, Y] is held off by X, which `one` holds: yielding Y to it would serve nobody.
      const started = Date.now();
      const stamp = await one.locks.tryLocks([{ name: y, mode: 'write' }], { waitMs: 3_000 });
      expect(stamp).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(500);
      await one.locks.releaseLocks(stamp);
      await one.locks.releaseLocks(held);
      const both = await group;
      expect(both).toBeGreaterThan(stamp);
      await two.locks.releaseLocks(both);
    });

    it('ends a wait at its deadline with 0 and leaves no waiter behind', async () => {
      const d = name('D');
      const held = await one.locks.tryLocks([{ name: d, mode: 'write' }]);
      const started = Date.now();
      expect(await two.locks.tryLocks([{ name: d, mode: 'read' }], { waitMs: 300 })).toBe(0);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(await admin(two).listWaiters({ name: d })).toEqual([]);
      await one.locks.releaseLocks(held);
    });

    it('renews a lease while its holder lives; once the holder is gone, the reaper frees it when its lease ends', async () => {
      const l = name('L');
      const holder = await apps.start({ appId: name('holder'), leaseMs: 500, renewIntervalMs: 100, reaperIntervalMs: NO_REAPER });
      const stamp = await holder.locks.tryLocks([{ name: l, mode: 'write' }]);
      await sleep(1200); // more than two leases
      expect(holder.locks.isHeld(stamp)).toBe(true);
      expect(await two.locks.reapStaleLocks()).toBe(0);
      expect(await two.locks.tryLocks([{ name: l, mode: 'write' }])).toBe(0);
      const [grant] = await two.locks.getGrants({ name: l });
      expect(grant!.leaseLeftMs).toBeGreaterThan(0);
      await holder.close(); // nobody renews it any more; its rows stay
      expect(await two.locks.tryLocks([{ name: l, mode: 'write' }])).toBe(0);
      await sleep(700);
      expect(await two.locks.reapStaleLocks()).toBeGreaterThanOrEqual(1);
      expect((await admin(two).getLog({ stamp }))[0]).toMatchObject({ status: 'REAPED', endedAt: expect.any(Date) });
      const next = await two.locks.tryLocks([{ name: l, mode: 'write' }]);
      expect(next).toBeGreaterThan(stamp);
      await two.locks.releaseLocks(next);
    });

    it('frees a grant by force, logs who and why, wakes its waiter, and tells its holder on the next renewal', async () => {
      const f = name('F');
      const holder = await apps.start({ appId: name('stuck'), leaseMs: 5000, renewIntervalMs: 100 });
      const stamp = await holder.locks.tryLocks([{ name: f, mode: 'write' }]);
      const signal = holder.locks.getSignal(stamp);
      const waiting = two.locks.tryLocks([{ name: f, mode: 'write' }], { waitMs: 30_000 });
      await until(async () => (await admin(one).listWaiters({ name: f })).length === 1);
      const forced = await admin(one).forceRelease(stamp, 'stuck in a test');
      expect(forced).toMatchObject({ stamp, appId: name('stuck'), locks: [{ name: f, mode: 'write' }], reason: 'stuck in a test' });
      const next = await waiting;
      expect(next).toBeGreaterThan(stamp);
      expect((await admin(two).getLog({ stamp }))[0]).toMatchObject({
        status: 'FORCED',
        endedBy: admin(one).actor,
        endReason: 'stuck in a test',
      });
      await until(() => signal.aborted);
      expect(holder.locks.isHeld(stamp)).toBe(false);
      await expect(holder.locks.releaseLocks(stamp)).rejects.toThrow(IllegalMonitorStateError);
      await two.locks.releaseLocks(next);
    });

    it("refuses a release of a stamp twice or of another app's stamp, and recovery frees only the app's own locks", async () => {
      const [r, s] = [name('R'), name('S')];
      const mine = await one.locks.tryLocks([{ name: r, mode: 'write' }]);
      const theirs = await two.locks.tryLocks([{ name: s, mode: 'write' }]);
      await expect(one.locks.releaseLocks(theirs)).rejects.toThrow(IllegalMonitorStateError);
      const other = await one.locks.tryLocks([{ name: s, mode: 'read' }]);
      expect(other).toBe(0);
      expect(await one.locks.releaseAllLocks()).toBe(1);
      expect((await admin(one).getLog({ stamp: mine }))[0]!.status).toBe('RECOVERED');
      await expect(one.locks.releaseLocks(mine)).rejects.toThrow(IllegalMonitorStateError);
      expect((await one.locks.getGrants()).map((g) => g.stamp)).toContain(theirs);
      await two.locks.releaseLocks(theirs);
      await expect(two.locks.releaseLocks(theirs)).rejects.toThrow(IllegalMonitorStateError);
    });

    it('is re-entrant within one call chain, and refuses to upgrade a read the chain holds', async () => {
      const e = name('E');
      const result = await one.locks.withLocks([{ name: e, mode: 'write' }], async () => {
        const outer = one.locks.currentLock()!.stamp;
        const inner = await one.locks.withLocks([{ name: e, mode: 'write' }], async () => one.locks.currentLock()!.stamp);
        expect(await two.locks.tryLocks([{ name: e, mode: 'read' }])).toBe(0);
        return [outer, inner, (await one.locks.getGrants({ name: e })).length];
      });
      expect(result).toEqual([expect.any(Number), (result as number[])[0], 1]);
      await expect(
        one.locks.withLocks([{ name: e, mode: 'read' }], () => one.locks.withLocks([{ name: e, mode: 'write' }], () => 1)),
      ).rejects.toThrow(LockUpgradeError);
      expect(await one.locks.getGrants({ name: e })).toEqual([]);
    });

    it('refuses to start a second live instance of an app id, and lets it start once the first is gone', async () => {
      const appId = name('twin');
      const first = await apps.start({ appId });
      await expect(apps.start({ appId })).rejects.toThrow(AppIdInUseError); // closed after the test if it started
      await first.close();
      const again = await apps.start({ appId });
      expect(again.locks.appId).toBe(appId);
    });

    it('never over-grants nor grants part of a group under many concurrent callers, and leaves nothing behind', async () => {
      const names = ['N0', 'N1', 'N2', 'N3', 'N4'].map(name);
      const defaults: LockPermits = { read: 1, write: 1 };
      const permits: Record<string, LockPermits> = {
        [names[0]!]: { read: 1, write: 2 },
        [names[1]!]: { read: 3, write: 1 },
        [names[3]!]: { read: 2, write: 3 },
      };
      for (const [n, byMode] of Object.entries(permits)) {
        await admin(one).setPermits(n, 'read', byMode.read);
        await admin(one).setPermits(n, 'write', byMode.write);
      }
      const checker = new GrantChecker((n) => permits[n] ?? defaults);
      const granted = new Map<number, readonly LockRequest[]>();
      const snapshots: string[] = [];
      let attempts = 0;
      let running = true;
      const sampler = (async () => {
        while (running) {
          for (const grant of await admin(one).getGrants()) {
            const expected = granted.get(grant.stamp);
            if (expected && JSON.stringify(grant.locks) !== JSON.stringify(expected)) {
              snapshots.push(`stamp ${grant.stamp} holds ${JSON.stringify(grant.locks)}, granted ${JSON.stringify(expected)}`);
            }
          }
          await sleep(5);
        }
      })();
      const worker = async (app: LockApp) => {
        while (attempts < 800) {
          attempts++;
          await attemptRandomGroup(app.locks, names, checker, granted);
        }
      };
      try {
        await Promise.all([one, two].flatMap((app) => Array.from({ length: 4 }, () => worker(app))));
      } finally {
        running = false;
        await sampler;
      }
      expect([...checker.violations, ...snapshots]).toEqual([]);
      expect(granted.size).toBeGreaterThan(attempts / 10);
      expect(granted.size).toBeLessThan(attempts); // real contention: refusals too
      for (const n of names) expect(await admin(one).getGrants({ name: n })).toEqual([]);
    });
  });
}
