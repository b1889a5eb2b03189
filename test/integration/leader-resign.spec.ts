import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { LeaderService, LockAdminService, LockConfigurationError, type LeaderTerm } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { leadUntilTold, mostLeadersAtOnce, recordChanges } from '../support/leader-fleet.js';
import { createLockApp, trackApps, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** The leaving leader's grace (`shutdownGraceMs`): what `resign` waits for a work that ignores its signal. */
const GRACE_MS = 500;

/** Blocks this process for `ms` (nothing of it runs meanwhile: no timer, no I/O callback), as a pause of the VM would. */
const freeze = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** The messages `spy` (a spied method of `Logger.prototype`) was called with since call `from`, that name `pattern`. */
const linesOf = (spy: { mock: { calls: unknown[][] } }, pattern: RegExp, from = 0) =>
  spy.mock.calls.slice(from).map(([message]) => String(message)).filter((message) => pattern.test(message));

// Issue 48, item 8, from the side of those the promises are made to: the caller of `resign`, the next replica, the
// operator reading the logs, and the code that asks `isLeader`/`term` before it acts.
for (const dialect of DIALECTS) dialect.describe(`leader resign, rejoin back-off and paused leaders on ${dialect.name}`, () => {
  let db: TestDatabase;
  const apps = trackApps((appId: string, options: Partial<TestLockOptions> = {}) =>
    createLockApp(db.url, { appId, shutdownGraceMs: GRACE_MS, waitRecheckMs: 10_000, ...options }),
  );
  let test = 0;
  const role = () => `resign-${test}`;
  const leaders = (app: LockApp) => app.app.get(LeaderService);
  /** Waits until `count` candidates wait for this test's role in the database. */
  const waiting = (app: LockApp, count: number) =>
    until(async () => (await app.app.get(LockAdminService).listWaiters({ name: `leader:${role()}` })).length === count);

  beforeAll(async () => {
    db = await dialect.createDatabase();
  }, 60_000);
  beforeEach(() => test++);
  afterEach(async () => {
    jest.restoreAllMocks();
    await apps.closeAll();
  });
  afterAll(() => db?.drop());

  it('resign resolves within shutdownGraceMs although the work ignores its signal; the next replica is elected only once the first no longer believes it leads', async () => {
    const [one, two] = [await apps.start('one'), await apps.start('two')];
    const logs = (['log', 'warn', 'error'] as const).map((level) => jest.spyOn(Logger.prototype, level));
    const told = recordChanges([leaders(one), leaders(two)], role());
    let endLateWork!: () => void;
    leaders(one).campaign(role(), () => new Promise<void>((resolve) => (endLateWork = resolve))); // ignores its signal
    await until(() => leaders(one).isLeader(role()));
    const first = leaders(one).term(role())!;
    // What the first replica believes at the very instant the second is elected (one process: read synchronously).
    let firstBelievedAtElection: boolean | undefined;
    leaders(two).campaign(role(), (signal) => {
      firstBelievedAtElection = leaders(one).isLeader(role()) || leaders(one).term(role()) !== undefined;
      return leadUntilTold(signal);
    });
    await waiting(one, 1);

    const calledAt = performance.now();
    let resolvedAt = Infinity;
    void leaders(one).resign(role()).then(() => (resolvedAt = performance.now()));
    expect(leaders(one).isLeader(role())).toBe(false); // from the call on
    // The previous term's grant is not given up yet: the role cannot be stood for again.
    expect(() => leaders(one).campaign(role(), leadUntilTold)).toThrow(LockConfigurationError);
    await until(() => resolvedAt < Infinity, GRACE_MS + 5000).catch(() => undefined);
    expect(resolvedAt - calledAt).toBeLessThan(GRACE_MS + 2000);
    expect(resolvedAt - calledAt).toBeGreaterThanOrEqual(GRACE_MS - 20); // the work had its grace
    // Resolved once the grant was given up: the first replica holds nothing on the role's lock any more.
    const grants = await one.app.get(LockAdminService).getGrants({ name: `leader:${role()}` });
    expect(grants.filter((grant) => grant.appId === 'one')).toEqual([]);
    await until(() => leaders(two).isLeader(role()));
    expect(firstBelievedAtElection).toBe(false);
    expect(leaders(two).term(role())!.token).toBe(first.token + 1);
    expect(told.map((change) => `${change.app} ${change.leading}`)).toEqual(['0 true', '0 false', '1 true']);
    expect(mostLeadersAtOnce(told)).toBe(1);

    // The role can be stood for again (the late work still runs; it does not lead): the replica queues behind.
    leaders(one).campaign(role(), leadUntilTold);
    await waiting(one, 1);
    expect(leaders(one).isLeader(role())).toBe(false);
    // The late work's end is logged once.
    const from = logs.map((spy) => spy.mock.calls.length);
    endLateWork();
    const lateEnd = () => logs.flatMap((spy, i) => linesOf(spy, new RegExp(`term ${first.token}\\b`), from[i]));
    await until(() => lateEnd().length > 0);
    await sleep(200);
    expect(lateEnd()).toHaveLength(1);
    expect(leaders(two).isLeader(role())).toBe(true);
  });

  it('backs off when the work throws at once with rejoinDelayMs 0: a handful of terms in 2 s, not an ERROR line per term; a term that lasted resets it', async () => {
    const one = await apps.start('one');
    const errors = jest.spyOn(Logger.prototype, 'error');
    const terms: Array<{ token: number; at: number }> = [];
    let lastMs = 0; // how long the work runs before it throws
    leaders(one).campaign(
      role(),
      async (signal: AbortSignal, term: LeaderTerm) => {
        terms.push({ token: term.token, at: performance.now() });
        if (lastMs > 0) await sleep(lastMs, undefined, { signal }).catch(() => undefined);
        throw new Error('the work failed');
      },
      { rejoinDelayMs: 0 },
    );
    await until(() => terms.length > 0);
    const start = terms[0]!.at;
    await sleep(2000);
    const early = terms.filter((term) => term.at - start < 2000);
    const roleErrors = () => linesOf(errors, new RegExp(`role ${role()}\\b`));
    console.log(`leader back-off on ${dialect.name}: ${early.length} terms and ${roleErrors().length} ERROR lines in 2 s`);
    expect(early.length).toBeGreaterThanOrEqual(2); // it does stand again
    expect(early.length).toBeLessThanOrEqual(5);
    expect(early.at(-1)!.token - early[0]!.token).toBeLessThanOrEqual(5); // elections (each uses up a token)
    expect(roleErrors().length).toBeLessThanOrEqual(2);
    expect(roleErrors().length).toBeGreaterThanOrEqual(1); // the failure is said

    // A term that lasted (its work ran 5 s and more) resets the back-off: the next term follows at once.
    lastMs = 5200;
    const seen = terms.length;
    await until(() => terms.length > seen, 40_000); // the pause reached so far, then the lasting term begins
    await until(() => terms.length > seen + 1, lastMs + 2000);
    const [lasting, next] = [terms[seen]!, terms[seen + 1]!];
    expect(next.at - lasting.at).toBeLessThan(lastMs + 1000);
  }, 60_000);

  it('a leader paused past its lease reads false from isLeader() and term() as soon as it runs again, and that first check fires its signal', async () => {
    const options = { leaseMs: 1000, reaperIntervalMs: 200 };
    const [one, two] = [await apps.start('one', options), await apps.start('two', options)];
    let signal: AbortSignal | undefined;
    leaders(one).campaign(role(), (s) => {
      signal = s;
      return leadUntilTold(s);
    });
    await until(() => leaders(one).isLeader(role()));
    let firstBelievedAtElection: boolean | undefined;
    leaders(two).campaign(role(), (s) => {
      firstBelievedAtElection = leaders(one).isLeader(role());
      return leadUntilTold(s);
    });
    await waiting(one, 1);
    const told = recordChanges([leaders(one)], role());

    freeze(1000 + 300); // past the lease: no timer of this process ran meanwhile
    expect(leaders(one).term(role())).toBeUndefined(); // the first thing it does after the pause
    expect(signal!.aborted).toBe(true); // told by that check, before any timer has run
    expect(told.map((change) => change.leading)).toEqual([false]);
    expect(leaders(one).isLeader(role())).toBe(false);
    await until(() => leaders(two).isLeader(role()), 15_000);
    expect(firstBelievedAtElection).toBe(false);

    // The same through isLeader() as the first check: the second replica leads now, and is paused in turn.
    const told2 = recordChanges([leaders(two)], role());
    freeze(1000 + 300);
    expect(leaders(two).isLeader(role())).toBe(false);
    expect(told2.map((change) => change.leading)).toEqual([false]);
    expect(leaders(two).term(role())).toBeUndefined();
  }, 60_000);
});
