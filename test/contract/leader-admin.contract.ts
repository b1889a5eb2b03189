import { LeaderService, LockAdminService, type LeaderTerm, type LockLeaderInfo } from 'nestjs-db-locks';
import { trackApps, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import { until } from '../support/until.js';
import type { EngineStore, EngineTarget } from './lock-engine.contract.js';

/** Work that leads until its signal fires. */
const leadUntilTold = (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));

/**
 * What an operator sees of leader election (`LockAdminService.getLeaders`, read from the database by any replica): the
 * leader of each role, since when, its term, and the candidates in the order they will be elected, through hand-overs
 * by resign and by shutdown, on every store (PostgreSQL, MariaDB, the in-memory store of `LockTestingModule`).
 */
export function describeLeaderAdminContract(target: EngineTarget): void {
  target.describe(`the leaders an operator sees on ${target.name}`, () => {
    let store: EngineStore;
    const apps = trackApps((appId: string, options: Partial<TestLockOptions> = {}) =>
      store.start({ appId, instance: `${appId}-process`, shutdownGraceMs: 5000, ...options }),
    );
    const leaders = (app: LockApp) => app.app.get(LeaderService);
    const admin = (app: LockApp) => app.app.get(LockAdminService);

    beforeAll(async () => {
      store = await target.open();
    });
    afterEach(() => apps.closeAll());
    afterAll(() => store?.drop());

    /** The role as `observer` reads it, once `ready` holds of it. */
    const seen = async (observer: LockApp, role: string, ready: (info: LockLeaderInfo | undefined) => boolean) => {
      let info: LockLeaderInfo | undefined;
      await until(async () => ready((info = (await admin(observer).getLeaders({ role }))[0])), 10_000);
      return info!;
    };
    const appIds = (info: LockLeaderInfo) => info.candidates.map((candidate) => candidate.appId);

    it('shows the leader, its term and since when, and the candidates in order, through hand-overs by resign and shutdown', async () => {
      const role = 'reports';
      const [observer, one, two, three] = await Promise.all(['observer', 'one', 'two', 'three'].map((id) => apps.start(id)));
      expect(await admin(observer).getLeaders({ role })).toEqual([]); // never won, nobody waits

      leaders(one).campaign(role, leadUntilTold);
      await until(() => leaders(one).isLeader(role));
      leaders(two).campaign(role, leadUntilTold);
      await seen(observer, role, (info) => info?.candidates.length === 1);
      leaders(three).campaign(role, leadUntilTold);
      const first = await seen(observer, role, (info) => info?.candidates.length === 2);
      const term: LeaderTerm = leaders(one).term(role)!;
      expect(first).toMatchObject({
        role,
        leader: { appId: 'one', instance: 'one-process', term: term.token, stamp: expect.any(Number) },
        term: term.token,
      });
      expect(Math.abs(first.leader!.since.getTime() - term.since.getTime())).toBeLessThanOrEqual(1);
      expect(first.leader!.leaseLeftMs).toBeGreaterThan(0);
      expect(first.candidates.map((c) => [c.position, c.appId])).toEqual([
        [1, 'two'],
        [2, 'three'],
      ]);
      expect(first.candidates[0]!.waitingForMs).toBeGreaterThanOrEqual(first.candidates[1]!.waitingForMs);
      // The role's lock is the grant the report names.
      expect((await admin(observer).getGrants({ name: `leader:${role}` })).map((grant) => grant.stamp)).toEqual([first.leader!.stamp]);

      // Resign: the first candidate leads, in the next term; the one that resigned no longer stands.
      await leaders(one).resign(role);
      const second = await seen(observer, role, (info) => info?.leader?.appId === 'two');
      expect(second.leader).toMatchObject({ appId: 'two', instance: 'two-process', term: term.token + 1 });
      expect(second.term).toBe(term.token + 1);
      expect(second.leader!.term).toBe(leaders(two).term(role)!.token);
      expect(appIds(second)).toEqual(['three']);
      expect(second.leader!.since.getTime()).toBeGreaterThanOrEqual(first.leader!.since.getTime());

      // Shutdown of the leader: the next candidate leads; nobody waits any more.
      await two.close();
      const third = await seen(observer, role, (info) => info?.leader?.appId === 'three');
      expect(third).toMatchObject({ leader: { appId: 'three', term: term.token + 2 }, term: term.token + 2, candidates: [] });

      // Nobody stands: no leader, and the last term stays (the next leader's token will be larger).
      await leaders(three).resign(role);
      const vacant = await seen(observer, role, (info) => info?.leader === null);
      expect(vacant).toEqual({ role, leader: null, term: term.token + 2, candidates: [] });
    });

    it('lists every role, sorted, each with its own leader and candidates, and checks the role before any database call', async () => {
      const [one, two] = await Promise.all([apps.start('one'), apps.start('two')]);
      leaders(one).campaign('cache-warmer', leadUntilTold);
      await until(() => leaders(one).isLeader('cache-warmer'));
      leaders(two).campaign('cache-warmer', leadUntilTold);
      leaders(two).campaign('broadcaster', leadUntilTold);
      await until(() => leaders(two).isLeader('broadcaster'));
      leaders(one).campaign('broadcaster', leadUntilTold);
      await seen(one, 'broadcaster', (info) => info?.candidates.length === 1);
      await seen(one, 'cache-warmer', (info) => info?.candidates.length === 1);
      const all = (await admin(two).getLeaders()).filter((info) => ['broadcaster', 'cache-warmer'].includes(info.role));
      expect(all.map((info) => [info.role, info.leader?.appId, appIds(info)])).toEqual([
        ['broadcaster', 'two', ['one']],
        ['cache-warmer', 'one', ['two']],
      ]);
      expect(() => admin(one).getLeaders({ role: '' })).toThrow('role');
      expect(() => admin(one).getLeaders({ role: 'a\nb' })).toThrow('role');
    });
  });
}
