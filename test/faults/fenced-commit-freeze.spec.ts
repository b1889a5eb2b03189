import { GrantNotFoundError, LockAdminService, LockLostError, LockStoreError } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startFaultProxy, type FaultProxy } from '../support/tcp-proxy.js';
import type { TestDatabase } from '../support/test-database.js';

const LEASE_MS = 1000;
/** How long the network stays frozen after business done: the COMMIT lands 2.5 leases later. */
const FREEZE_MS = 2500;
const options = { leaseMs: LEASE_MS, renewIntervalMs: 200, queryTimeoutMs: 10_000 };
/** A statement of the business-done fence on either dialect. */
const BUSINESS_DONE = "status = 'BUSINESS_DONE'";

/** What the holder of a fenced transaction saw. */
interface HolderView {
  signal?: AbortSignal;
  stamp?: number;
  /** When its lost signal fired (performance.now()), if it did. */
  firedAt?: number;
}

/**
 * A fenced transaction whose COMMIT is held up past the lease by a network freeze right after business done: the row
 * business done locked holds off every end of the grant, so the holder gets one outcome. Committed: its lost signal
 * never fires, and nobody else is granted (nor reaped, nor forced) before the commit. Failed (the connection reset
 * during the freeze): the signal fires, with a reason naming the failed commit, and the caller gets the unknown outcome.
 */
for (const dialect of DIALECTS) dialect.describe(`a fenced commit held up past the lease on ${dialect.name}`, () => {
  let db: TestDatabase;
  let proxy: FaultProxy;
  let holder: LockApp;
  let other: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    await db.query('CREATE TABLE fenced_writes (id int PRIMARY KEY)');
    proxy = await startFaultProxy(db.url);
    holder = await createLockApp(proxy.via(db.url), { appId: 'holder', ...options, reaperIntervalMs: 0 }, 6);
    // The other instance reaps every 100 ms: a grant it could take, it would.
    other = await createLockApp(db.url, { appId: 'other', ...options, reaperIntervalMs: 100 }, 6);
  });
  afterEach(() => proxy.thaw()); // a failed test leaves no freeze to the next one
  afterAll(async () => {
    await holder?.close();
    await other?.close();
    await proxy?.close();
    await db?.drop();
  });

  /** Runs a fenced transaction writing `id` under `name`; the network freezes right after its business done. */
  const frozenCommit = (name: string, id: number, view: HolderView) => {
    let armed!: (frozen: Promise<void>) => void;
    const frozen = new Promise<void>((resolve) => (armed = (freeze) => resolve(freeze)));
    const result = holder.locks.withLocks({ locks: [`${name}_WRITE`], transaction: true }, async () => {
      const lock = holder.locks.currentLock()!;
      view.stamp = lock.stamp;
      view.signal = lock.signal;
      lock.signal.addEventListener('abort', () => (view.firedAt = performance.now()));
      await holder.locks.currentManager().query(`INSERT INTO fenced_writes (id) VALUES (${id})`);
      armed(proxy.arm(BUSINESS_DONE, 'freeze'));
      return 'committed';
    });
    return { result, frozen };
  };
  const written = async (id: number) =>
    (await db.query<{ id: number }>('SELECT id FROM fenced_writes WHERE id = $1', [id])).length;

  it('never fires the lost signal of a transaction that committed, and grants nobody else before the commit', async () => {
    const view: HolderView = {};
    const { result, frozen } = frozenCommit('FROZEN_OK', 1, view);
    result.catch(() => undefined);
    await Promise.race([frozen, result]);
    const frozenAt = performance.now();
    // An admin forcing the grant while the commit is in flight waits for it.
    const forced = other.app.get(LockAdminService).forceRelease(view.stamp!, 'stuck?').then(
      () => 'forced' as const,
      (error: unknown) => error,
    );
    let forcedAt = 0;
    void forced.then(() => (forcedAt = performance.now()));
    while (performance.now() - frozenAt < FREEZE_MS) {
      expect(await other.locks.tryLocks(['FROZEN_OK_WRITE'])).toBe(0);
      expect(await other.locks.reapStaleLocks()).toBe(0);
      await sleep(100);
    }
    expect(forcedAt).toBe(0);
    expect(view.firedAt).toBeUndefined(); // the lease ended 1.5 leases ago on the holder's clock: the commit decides
    expect(holder.locks.isHeld(view.stamp!)).toBe(true); // and nobody else can be granted meanwhile
    proxy.thaw();
    const thawedAt = performance.now();

    await expect(result).resolves.toBe('committed');
    expect(await written(1)).toBe(1);
    // The forced release went on after the commit: it freed the grant, or found it released already.
    const outcome = await forced;
    expect(outcome === 'forced' || outcome instanceof GrantNotFoundError).toBe(true);
    expect(forcedAt).toBeGreaterThanOrEqual(thawedAt);
    await sleep(3 * options.renewIntervalMs);
    expect(view.signal!.aborted).toBe(false);
    expect(view.firedAt).toBeUndefined();
  });

  it('fires the lost signal once the held-up commit failed, and grants the other instance only after', async () => {
    const view: HolderView = {};
    const { result, frozen } = frozenCommit('FROZEN_RESET', 2, view);
    const failed = result.then(
      () => undefined,
      (error: unknown) => ({ error, at: performance.now() }),
    );
    await Promise.race([frozen, failed]);
    let grantedAt = 0;
    const waiting = other.locks
      .tryLocks(['FROZEN_RESET_WRITE'], { waitMs: 15_000 })
      .then((stamp) => ((grantedAt = performance.now()), stamp));
    await sleep(FREEZE_MS);
    expect(grantedAt).toBe(0);
    expect(view.firedAt).toBeUndefined();
    proxy.resetAll(); // the COMMIT never reaches the server: it rolls back

    const outcome = await failed;
    expect(outcome?.error).toBeInstanceOf(LockStoreError);
    expect((outcome?.error as LockStoreError).outcomeUnknown).toBe(true);
    expect(view.firedAt).toBeDefined();
    expect(view.firedAt!).toBeLessThanOrEqual(outcome!.at);
    const reason: unknown = view.signal!.reason;
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).message).toMatch(/fenced commit relying on it failed/);
    const stamp = await waiting;
    expect(stamp).toBeGreaterThan(0);
    expect(grantedAt).toBeGreaterThan(view.firedAt!);
    expect(await written(2)).toBe(0);
    await other.locks.releaseLocks(stamp);
  });
});
