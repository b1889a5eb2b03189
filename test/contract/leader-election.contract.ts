import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import {
  InvalidLockArgumentError,
  LeadershipEndedError,
  LeaderService,
  LockAdminService,
  LockConfigurationError,
  LockLostError,
  LockShutdownError,
  type LeaderTerm,
  type LeadershipChange,
  type LockGrant,
} from 'nestjs-db-locks';
import { trackApps, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { LeaderTermStore } from '../../lib/store/leader-terms.store.js';
import type { EngineTarget, EngineStore } from './lock-engine.contract.js';

/** How long a waiter's own re-check timer waits: a hand-over well before it came from the database's wake-up. */
const RECHECK_MS = 10_000;

/** What a replica's leader work reported. */
interface Report {
  readonly app: string;
  readonly event: 'start' | 'stop';
  readonly token: number;
  readonly reason?: string;
}

/**
 * Leader election's contract through the public API (`LeaderService`), on every store (PostgreSQL, MariaDB, the
 * in-memory store of `LockTestingModule`): one leader at a time counted from the leaders' side, the leader told before
 * the next is elected, tokens that grow with every election, hand-over in the candidates' order on resign, on the
 * work's end and on shutdown, and a lost grant firing the signal.
 */
export function describeLeaderElectionContract(target: EngineTarget): void {
  target.describe(`leader election's contract on ${target.name}`, () => {
    let store: EngineStore;
    const apps = trackApps((appId: string, options: Partial<TestLockOptions> = {}) =>
      store.start({ appId, waitRecheckMs: RECHECK_MS, shutdownGraceMs: 5000, leaseMs: 3000, ...options }),
    );
    let test = 0;
    let reports: Report[] = [];
    const role = () => `role-${test}`;
    const leaders = (app: LockApp) => app.app.get(LeaderService);

    /** Work that leads until its signal fires, reporting its start and its stop. */
    const leadUntilTold = (app: string) => (signal: AbortSignal, term: LeaderTerm) => {
      reports.push({ app, event: 'start', token: term.token });
      return new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          reports.push({ app, event: 'stop', token: term.token, reason: (signal.reason as Error).name });
          resolve();
        }),
      );
    };

    /** At most one replica believed it led at any point of the reports, and every stop follows its own start. */
    const expectOneLeaderAtATime = () => {
      let leader: Report | undefined;
      for (const report of reports) {
        if (report.event === 'start') {
          expect(leader).toBeUndefined();
          leader = report;
        } else {
          expect(leader).toMatchObject({ app: report.app, token: report.token });
          leader = undefined;
        }
      }
    };

    /** Waits until `count` candidates of this test's role wait in the database (their place in the queue is taken). */
    const waiting = (app: LockApp, count: number) =>
      until(async () => (await app.app.get(LockAdminService).listWaiters({ name: `leader:${role()}` })).length === count);

    /** `one` leads (work that leads until told), then `two` and `three` stand, in that order in the queue. */
    const queueInOrder = async (one: LockApp, two: LockApp, three: LockApp) => {
      leaders(one).campaign(role(), leadUntilTold('one'));
      await until(() => leaders(one).isLeader(role()));
      leaders(two).campaign(role(), leadUntilTold('two'));
      await waiting(one, 1);
      leaders(three).campaign(role(), leadUntilTold('three'));
      await waiting(one, 2);
    };

    beforeAll(async () => {
      store = await target.open();
    });
    beforeEach(() => {
      test++;
      reports = [];
    });
    afterEach(() => apps.closeAll());
    afterAll(() => store?.drop());

    it('elects one candidate, then hands over in the candidates\' order on resign, with tokens that grow by one', async () => {
      const [one, two, three] = [await apps.start('one'), await apps.start('two'), await apps.start('three')];
      await queueInOrder(one, two, three);
      const first = leaders(one).term(role())!;
      expect(leaders(two).isLeader(role())).toBe(false);
      expect(leaders(three).term(role())).toBeUndefined();

      const handedOver = Date.now();
      await leaders(one).resign(role());
      expect(leaders(one).isLeader(role())).toBe(false);
      await until(() => leaders(two).isLeader(role()));
      expect(Date.now() - handedOver).toBeLessThan(RECHECK_MS / 2); // woken by the database, not the re-check
      expect(leaders(two).term(role())!.token).toBe(first.token + 1);
      await leaders(two).resign(role());
      await until(() => leaders(three).isLeader(role()));
      expect(leaders(three).term(role())!.token).toBe(first.token + 2);
      expect(reports.map((r) => `${r.app} ${r.event} ${r.reason ?? ''}`.trim())).toEqual([
        'one start',
        'one stop LeadershipEndedError',
        'two start',
        'two stop LeadershipEndedError',
        'three start',
      ]);
      expectOneLeaderAtATime();
    });

    it('tells the leader (its change and its signal) before the next replica is elected, and counts terms across apps', async () => {
      const [one, two] = [await apps.start('one'), await apps.start('two')];
      const changes: string[] = [];
      const record = (app: string) => (change: LeadershipChange) =>
        changes.push(`${app} ${change.leading ? 'leads' : 'stops'} ${change.term.token} ${change.reason}`);
      leaders(one).changes(role()).subscribe(record('one'));
      leaders(two).changes().subscribe(record('two'));
      leaders(one).campaign(role(), leadUntilTold('one'));
      await until(() => leaders(one).isLeader(role()));
      leaders(two).campaign(role(), leadUntilTold('two'));
      await waiting(one, 1);
      const token = leaders(one).term(role())!.token;
      await leaders(one).resign(role());
      await until(() => leaders(two).isLeader(role()));
      expect(changes).toEqual([
        `one leads ${token} elected`,
        `one stops ${token} resigned`,
        `two leads ${token + 1} elected`,
      ]);
    });

    it('hands the role over when the leader\'s work returns or throws, and the replica stands again behind the others', async () => {
      const [one, two] = [await apps.start('one'), await apps.start('two')];
      let runs = 0;
      const shortWork = (app: string) => async (signal: AbortSignal, term: LeaderTerm) => {
        reports.push({ app, event: 'start', token: term.token });
        // The other candidate is in the queue before the work ends (on a loaded machine its campaign, or its rejoin
        // after its own term, can take longer than the work): the promise is about the order of those who wait.
        await until(async () => signal.aborted || (await one.app.get(LockAdminService).listWaiters({ name: `leader:${role()}` })).length === 1);
        await new Promise((resolve) => setTimeout(resolve, 50));
        reports.push({ app, event: 'stop', token: term.token, reason: signal.aborted ? 'told' : 'returned' });
        if (++runs % 2 === 0) throw new Error('the work failed');
      };
      leaders(one).campaign(role(), shortWork('one'), { rejoinDelayMs: 0 });
      leaders(two).campaign(role(), shortWork('two'), { rejoinDelayMs: 0 });
      await until(() => reports.filter((r) => r.event === 'stop').length >= 6);
      // The terms begun while both stood (read before the resign: it ends a candidacy, and with it the order promise).
      // The resign may land while the next hand-over is in flight: the resigned replica, granted at that moment, does
      // not serve its term (it releases the role at once, its token used up), and the other candidate, still standing,
      // is then elected again.
      const starts = reports.filter((r) => r.event === 'start');
      await leaders(one).resign(role());
      await leaders(two).resign(role());
      expect(starts.length).toBeGreaterThanOrEqual(6);
      // Whether the work returned or threw, the role went to the other candidate, which had waited longer.
      for (let i = 1; i < starts.length; i++) {
        expect(starts[i]!.app).not.toBe(starts[i - 1]!.app);
        expect(starts[i]!.token).toBe(starts[i - 1]!.token + 1);
      }
      // The first six ended by themselves (the resign may have told a seventh).
      expect(reports.filter((r) => r.event === 'stop').slice(0, 6).every((r) => r.reason === 'returned')).toBe(true);
      expectOneLeaderAtATime();
    });

    it('a candidate that resigns while its election is under way does not lead: its token is used up, the next candidate is elected', async () => {
      const [one, two, three] = [await apps.start('one'), await apps.start('two'), await apps.start('three')];
      const changes: string[] = [];
      leaders(two).changes().subscribe((change) => changes.push(`two ${change.leading ? 'leads' : 'stops'} ${change.term.token}`));
      // Two resigns at the instant its grant is being elected (the race at the end of a test that resigns while a
      // hand-over is in flight): the term is recorded, and two must neither serve it nor keep the role.
      const terms = two.app.get(LeaderTermStore);
      const elect = terms.elect.bind(terms);
      let resigned: Promise<void> | undefined;
      jest.spyOn(terms, 'elect').mockImplementation((...args) => {
        resigned ??= leaders(two).resign(role());
        return elect(...args);
      });
      await queueInOrder(one, two, three);
      const first = leaders(one).term(role())!.token;
      await leaders(one).resign(role());
      await until(() => resigned !== undefined);
      await resigned;
      await until(() => leaders(three).isLeader(role()));
      expect(leaders(three).term(role())!.token).toBe(first + 2); // two's term, never served, used up a number
      expect(leaders(two).isLeader(role())).toBe(false);
      expect(changes).toEqual([]);
      await leaders(three).resign(role());
      expect(reports.map((r) => `${r.app} ${r.event} ${r.token}`)).toEqual([
        `one start ${first}`,
        `one stop ${first}`,
        `three start ${first + 2}`,
        `three stop ${first + 2}`,
      ]);
      expectOneLeaderAtATime();
    });

    it('on app.close() fires the leader\'s signal, awaits its work, then hands over', async () => {
      const [one, two] = [await apps.start('one'), await apps.start('two')];
      let finished = false;
      leaders(one).campaign(role(), async (signal, term) => {
        await leadUntilTold('one')(signal, term);
        await new Promise((resolve) => setTimeout(resolve, 300)); // the last of its work, still leading the role
        finished = true;
      });
      await until(() => leaders(one).isLeader(role()));
      leaders(two).campaign(role(), (signal, term) => {
        reports.push({ app: 'two', event: 'start', token: term.token, reason: finished ? 'after' : 'before' });
        return leadUntilTold('two')(signal, term);
      });
      await waiting(one, 1);
      await one.close();
      await until(() => leaders(two).isLeader(role()));
      expect(reports.map((r) => `${r.app} ${r.event} ${r.reason ?? ''}`.trim())).toEqual([
        'one start',
        `one stop ${LockShutdownError.name}`,
        'two start after', // the leaving leader's work had ended when the next was elected
        'two start',
      ]);
    });

    it('hands over when shutdownGraceMs ends, although the leaving leader\'s work ignores its signal', async () => {
      const one = await apps.start('one', { shutdownGraceMs: 300 });
      const two = await apps.start('two');
      leaders(one).campaign(role(), (signal, term) => {
        void leadUntilTold('one')(signal, term);
        return new Promise(() => undefined); // never returns
      });
      await until(() => leaders(one).isLeader(role()));
      leaders(two).campaign(role(), leadUntilTold('two'));
      await waiting(one, 1);
      const closing = Date.now();
      await one.close();
      await until(() => leaders(two).isLeader(role()));
      expect(Date.now() - closing).toBeLessThan(4000); // 300 ms of grace, not the 10 s the work would take
      expect(reports.map((r) => `${r.app} ${r.event}`)).toEqual(['one start', 'one stop', 'two start']);
    });

    it('keeps one leader when a permits row gives the role\'s lock two writers: the second grant is not elected', async () => {
      const [one, two] = [await apps.start('one'), await apps.start('two')];
      await one.app.get(LockAdminService).setPermits(`leader:${role()}`, 'write', 2);
      leaders(one).campaign(role(), leadUntilTold('one'));
      leaders(two).campaign(role(), leadUntilTold('two'));
      await until(() => leaders(one).isLeader(role()) || leaders(two).isLeader(role()));
      for (let i = 0; i < 10; i++) {
        expect([leaders(one).isLeader(role()), leaders(two).isLeader(role())].filter(Boolean)).toHaveLength(1);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(reports.filter((r) => r.event === 'start')).toHaveLength(1);
      await one.app.get(LockAdminService).setPermits(`leader:${role()}`, 'write', null);
    });

    it('fires the signal with LockLostError when the grant is ended under the leader, and elects the next', async () => {
      const [one, two] = [await apps.start('one'), await apps.start('two')];
      leaders(one).campaign(role(), leadUntilTold('one'));
      await until(() => leaders(one).isLeader(role()));
      leaders(two).campaign(role(), leadUntilTold('two'));
      await waiting(one, 1);
      const admin = one.app.get(LockAdminService);
      const [grant] = await admin.getGrants({ name: `leader:${role()}` });
      await admin.forceRelease(grant!.stamp, 'the contract test');
      await until(() => leaders(two).isLeader(role()));
      // The forced release skips "told first" by design (an operator's act); the old leader learns it at its next renewal.
      await until(() => reports.some((r) => r.app === 'one' && r.event === 'stop'), 20_000);
      expect(reports.find((r) => r.app === 'one' && r.event === 'stop')!.reason).toBe(LockLostError.name);
      expect(leaders(one).isLeader(role())).toBe(false);
      // It stands again at once, behind the new leader.
      await waiting(one, 1);
    });

    it('keeps a leader\'s term past the instance\'s maxHoldMs, which still ends the instance\'s other grants', async () => {
      // The leader's lease (1 s, renewed every 150 ms) is the only limit of its term; the instance's other grants start
      // with a lease of maxHoldMs and are ended at maxHoldMs, then reaped (both instances reap every 100 ms).
      const maxHoldMs = 300;
      const capped = { maxHoldMs, leaseMs: 1000, renewIntervalMs: 150, reaperIntervalMs: 100 };
      const errors = jest.spyOn(Logger.prototype, 'error');
      try {
        const [one, two] = [await apps.start('one', capped), await apps.start('two', capped)];
        const admin = one.app.get(LockAdminService);
        let leaseAtElection = 0;
        leaders(one).campaign(role(), async (signal, term) => {
          // Read before the first renewal can have come (150 ms): the lease the grant started with in the database.
          [{ leaseLeftMs: leaseAtElection }] = (await admin.getGrants({ name: `leader:${role()}` })) as [LockGrant];
          return leadUntilTold('one')(signal, term);
        });
        await until(() => leaders(one).isLeader(role()) && leaseAtElection > 0);
        expect(leaseAtElection).toBeGreaterThan(maxHoldMs); // leaseMs, not the grantLeaseMs of the other grants
        const term = leaders(one).term(role())!;
        leaders(two).campaign(role(), leadUntilTold('two'));
        await waiting(one, 1);

        const plain = `plain-${test}`;
        const acquiredAt = performance.now();
        const stamp = await one.locks.tryLocks([`${plain}_WRITE`]);
        const signal = one.locks.getSignal(stamp);
        let toldAfter = Infinity;
        signal.addEventListener('abort', () => (toldAfter = performance.now() - acquiredAt));
        // Three times maxHoldMs, looking all along: the leader leads the same term, the other candidate waits, and the
        // renewals never extend the ordinary grant's lease past maxHoldMs after its acquisition (database clock).
        while (performance.now() - acquiredAt < 3 * maxHoldMs) {
          expect(leaders(one).term(role())).toEqual(term);
          expect(leaders(two).isLeader(role())).toBe(false);
          const [grant] = await admin.getGrants({ name: plain });
          if (grant) expect(grant.heldForMs + grant.leaseLeftMs).toBeLessThanOrEqual(maxHoldMs + 5);
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        expect(leaders(one).isLeader(role())).toBe(true);
        expect(reports).toEqual([{ app: 'one', event: 'start', token: term.token }]);
        const [roleInfo] = await admin.getLeaders({ role: role() });
        expect(roleInfo).toMatchObject({ term: term.token, leader: { appId: 'one', term: term.token } });

        // The ordinary grant of the same instance was ended at maxHoldMs, and the reaper freed it.
        expect(signal.aborted).toBe(true);
        expect(signal.reason).toBeInstanceOf(LockLostError);
        expect((signal.reason as Error).message).toMatch(/maxHoldMs \(300 ms\)/);
        expect(toldAfter).toBeGreaterThanOrEqual(maxHoldMs);
        await until(async () => (await admin.getLog({ stamp }))[0]?.status === 'REAPED');
        expect(await two.locks.tryLocks([`${plain}_WRITE`])).toBeGreaterThan(0);
        // The only error logged: the loss of the ordinary grant.
        expect(errors.mock.calls.map(([message]) => String(message))).toEqual([expect.stringMatching(new RegExp(`stamp ${stamp} lost`))]);
      } finally {
        errors.mockRestore();
      }
    });

    it('refuses an invalid role, work or option, and a second candidacy for one role, before any database call', async () => {
      const one = await apps.start('one');
      const work = () => undefined;
      expect(() => leaders(one).campaign('', work)).toThrow(InvalidLockArgumentError);
      expect(() => leaders(one).campaign('a\nb', work)).toThrow(InvalidLockArgumentError);
      expect(() => leaders(one).campaign('x'.repeat(194), work)).toThrow(InvalidLockArgumentError);
      expect(() => leaders(one).campaign('ok', 'work' as never)).toThrow(InvalidLockArgumentError);
      expect(() => leaders(one).campaign('ok', work, { rejoinDelayMs: -1 })).toThrow(InvalidLockArgumentError);
      expect(() => leaders(one).campaign('ok', work, { every: 1 } as never)).toThrow(InvalidLockArgumentError);
      expect(() => leaders(one).isLeader(42 as never)).toThrow(InvalidLockArgumentError);
      leaders(one).campaign(role(), leadUntilTold('one'));
      expect(() => leaders(one).campaign(role(), work)).toThrow(LockConfigurationError);
      await until(() => leaders(one).isLeader(role()));
      await leaders(one).resign(role());
      expect(reports.at(-1)!.reason).toBe(LeadershipEndedError.name);
    });
  });
}
