import { createLockApp, type LockApp } from '../support/lock-app.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** How soon a free name must be granted to a caller that waits for it (its wait is 3 s). */
const PROMPT_MS = 500;

/**
 * Hold and wait, with an earlier waiter blocked elsewhere (issue 37 item 9, FairLockWaiters1796700000000): a request
 * yields to an earlier waiter of its name only when that waiter could be served, so a caller holding X and waiting
 * for a free Y is not held off by an earlier waiter of [X, Y], which waits for the caller's own X (before, both
 * waited until the caller's wait timed out). Same with a longer cycle through a third instance.
 */
for (const dialect of DIALECTS) dialect.describe(`hold and wait behind an earlier waiter on ${dialect.name}`, () => {
  let db: TestDatabase;
  let a: LockApp;
  let b: LockApp;
  let c: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    [a, b, c] = await Promise.all(['hw-a', 'hw-b', 'hw-c'].map((appId) => createLockApp(db.url, { appId })));
  });
  afterAll(async () => {
    await Promise.all([a, b, c].map((app) => app?.close()));
    await db?.drop();
  });

  /** Waits until `appId` has `count` waiter rows for names that begin with `prefix` (this test's names). */
  const waiting = (appId: string, prefix: string, count: number): Promise<void> =>
    until(
      async () =>
        (await db.query(`SELECT 1 FROM locking_waiters WHERE app_id = '${appId}' AND lock_name LIKE '${prefix}%'`)).length ===
        count,
    );

  // One name (the one-lock function or procedure) and a group (the batch function, the group procedure).
  const cases: readonly (readonly ('READ' | 'WRITE')[])[] = [['WRITE'], ['READ'], ['WRITE', 'WRITE']];
  for (const asked of cases) {
    const key = asked.join('_');
    it(`A holds X, B waits for [X, Y]: A's ${key.toLowerCase()} of the free Y${asked.length > 1 ? ', Z' : ''} is granted at once`, async () => {
      const x = await a.locks.tryLocks([`HW_${key}_X_WRITE`]);
      expect(x).toBeGreaterThan(0);
      const group = b.locks.tryLocks([`HW_${key}_X_WRITE`, `HW_${key}_Y_WRITE`], { waitMs: 20_000 });
      group.catch(() => undefined); // if the test fails first, closing B ends this wait
      await waiting('hw-b', `HW_${key}_`, 2);
      const started = Date.now();
      const y = await a.locks.tryLocks(
        asked.map((mode, i) => `HW_${key}_${'YZ'[i]}_${mode}` as `${string}_${typeof mode}`),
        { waitMs: 3_000 },
      );
      const tookMs = Date.now() - started;
      expect(y).toBeGreaterThan(0);
      expect(tookMs).toBeLessThan(PROMPT_MS);
      await a.locks.releaseLocks(y);
      await a.locks.releaseLocks(x);
      const both = await group;
      expect(both).toBeGreaterThan(0);
      await b.locks.releaseLocks(both);
    }, 30_000);
  }

  it('A holds X, C holds Q and waits for X, B waits for [Y, Q] before: A is granted the free Y at once', async () => {
    const x = await a.locks.tryLocks(['HW_CYCLE_X_WRITE']);
    const q = await c.locks.tryLocks(['HW_CYCLE_Q_WRITE']);
    expect(x).toBeGreaterThan(0);
    expect(q).toBeGreaterThan(0);
    const group = b.locks.tryLocks(['HW_CYCLE_Y_WRITE', 'HW_CYCLE_Q_WRITE'], { waitMs: 20_000 });
    await waiting('hw-b', 'HW_CYCLE_', 2);
    const cWaits = c.locks.tryLocks(['HW_CYCLE_X_WRITE'], { waitMs: 20_000 });
    for (const wait of [group, cWaits]) wait.catch(() => undefined); // as above
    await waiting('hw-c', 'HW_CYCLE_', 1);
    const started = Date.now();
    const y = await a.locks.tryLocks(['HW_CYCLE_Y_WRITE'], { waitMs: 3_000 });
    const tookMs = Date.now() - started;
    expect(y).toBeGreaterThan(0);
    expect(tookMs).toBeLessThan(PROMPT_MS);
    // A lets go of both: C takes X, then lets go of both; B takes [Y, Q].
    await a.locks.releaseLocks(y);
    await a.locks.releaseLocks(x);
    const cx = await cWaits;
    expect(cx).toBeGreaterThan(0);
    await c.locks.releaseLocks(cx);
    await c.locks.releaseLocks(q);
    const both = await group;
    expect(both).toBeGreaterThan(0);
    await b.locks.releaseLocks(both);
  }, 30_000);
});
