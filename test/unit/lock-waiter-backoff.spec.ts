import { LockServerReadOnlyError } from '../../lib/errors/index.js';
import type { LockNotifications } from '../../lib/services/lock-notifications.service.js';
import { waitForGroup, type WaitContext } from '../../lib/services/lock-waiter.js';
import type { LockStore } from '../../lib/store/lock.store.js';

/**
 * A wait backing off after failures (a failover drops every pooled connection: the waiter's attempts fail one after
 * the other, and its pause doubles each time) and a release that hands it the name meanwhile. The failover spec found
 * such a waiter taking its grant 2.5 s after the release, at the end of its back-off; the grant needs no statement of
 * the waiter's, so it is taken at once. Timed on the real clock: the back-off here is at least 800 ms, the take
 * within 300 ms.
 */
describe('a wait backing off after failures', () => {
  /** Failed attempts before the one whose pause the hand-over cuts short (the sixth failure's: 800–1600 ms). */
  const FAILURES = 5;
  let handOver: ((stamp: number, rowsEndMs: number) => void) | undefined;
  let wakeAll: (() => void) | undefined;

  const context = (attempt: WaitContext['attempt'], handedOver: { from?: number }): WaitContext => ({
    store: { registersWaiters: true, release: async () => undefined } as unknown as LockStore,
    attempt,
    resolve: async () => 0,
    notifications: {
      listening: async () => undefined,
      subscribe: (_names: Iterable<string>, wake: () => void, _waiter?: string, handed?: (s: number, e: number) => void) => {
        wakeAll = wake;
        handOver = handed;
        return () => undefined;
      },
    } as unknown as LockNotifications,
    handedOver: (from) => void (handedOver.from = from),
    recheckMs: 60_000,
    ttlMs: 60_000,
    leaseMs: 30_000,
    cleanUp: async () => undefined,
  });

  it('takes a grant handed over during its back-off at once, not when the pause ends', async () => {
    const rowsEndMs = Date.now() + 60_000;
    let attempts = 0;
    let failedAt = 0;
    const attempt = async () => {
      attempts++;
      if (attempts === 1) return -rowsEndMs; // refused: its rows registered until rowsEndMs
      failedAt = performance.now();
      throw new LockServerReadOnlyError('tryLocks', '25006', new Error('read-only'));
    };
    const handedOver: { from?: number } = {};
    const controller = new AbortController();
    const waiting = waitForGroup(context(attempt, handedOver), [{ name: 'X', mode: 'write' }], Date.now() + 30_000, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(attempts).toBe(1);
    wakeAll!(); // a release elsewhere: the next attempts fail, the pause doubles each time
    while (attempts < 1 + FAILURES + 1) await new Promise((resolve) => setTimeout(resolve, 5));
    // Backing off after its sixth failure (800–1600 ms): a notification that only wakes is not enough to try again.
    wakeAll!();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(attempts).toBe(1 + FAILURES + 1);
    // The release hands it the name: taken without an attempt, well before the pause would end.
    handOver!(7, rowsEndMs);
    const stamp = await waiting;
    const tookMs = performance.now() - failedAt;
    expect(stamp).toBe(7);
    expect(attempts).toBe(1 + FAILURES + 1);
    expect(handedOver.from).toBeDefined();
    expect(tookMs).toBeLessThan(300);
  }, 10_000);

  it('ends its back-off when the wait is aborted', async () => {
    let attempts = 0;
    const attempt = async () => {
      attempts++;
      throw new LockServerReadOnlyError('tryLocks', '25006', new Error('read-only'));
    };
    const controller = new AbortController();
    const waiting = waitForGroup(context(attempt, {}), [{ name: 'Y', mode: 'write' }], Date.now() + 30_000, controller.signal);
    while (attempts < 6) await new Promise((resolve) => setTimeout(resolve, 5));
    const abortedAt = performance.now();
    controller.abort();
    await expect(waiting).rejects.toThrow(/abort/i);
    expect(performance.now() - abortedAt).toBeLessThan(300);
  }, 10_000);
});
