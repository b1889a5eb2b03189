import { setTimeout as sleep } from 'node:timers/promises';
import { AppIdInUseError, LockLostError } from 'nestjs-db-locks';
import { logRowsOf } from '../support/dialect-sql.js';
import { DIALECTS } from '../support/dialects.js';
import { Gate } from '../support/gate.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import type { TestDatabase } from '../support/test-database.js';

// A rolling deploy: app.close() begins while a locked call runs longer than a lease. The call's holder must keep its
// grant (renewed, its signal quiet, nobody else granted) and its app id (a same-appId process refused) until it ends.
for (const dialect of DIALECTS) dialect.describe(`holders during app.close() on ${dialect.name}`, () => {
  let db: TestDatabase;
  const apps = trackApps(createLockApp);

  beforeAll(async () => {
    db = await dialect.createDatabase();
  });
  afterEach(() => apps.closeAll());
  afterAll(() => db?.drop());

  it('a locked call that outlives two leases during close() keeps its grant and its app id, then releases', async () => {
    const draining = await createLockApp(db.url, { appId: 'draining', leaseMs: 1_500, renewIntervalMs: 300, reaperIntervalMs: 0 });
    const other = await apps.start(db.url, { appId: 'other', reaperIntervalMs: 50 });
    const gate = new Gate();
    let seen: { stamp: number; signal: AbortSignal } | undefined;
    const call = draining.locks.withLocks(['DRAIN_WRITE'], async () => {
      seen = draining.locks.currentLock();
      await gate.pass();
      return seen?.signal.aborted;
    });
    await gate.reached();
    const closing = draining.close();
    await sleep(200);
    // The replacement of a rolling deploy, with the same appId: refused, its start-up recovery never runs.
    const twin = await createLockApp(db.url, { appId: 'draining' }).catch((error: unknown) => error);
    if (!(twin instanceof Error)) await (twin as { close(): Promise<void> }).close();
    expect(twin).toBeInstanceOf(AppIdInUseError);
    // Another instance asks for the lock (and reaps) all along, for two leases: never granted while the call runs.
    const end = performance.now() + 3_000;
    let grantedMeanwhile = 0;
    while (performance.now() < end && grantedMeanwhile === 0) {
      grantedMeanwhile = await other.locks.tryLocks(['DRAIN_WRITE']);
      await sleep(20);
    }
    expect(grantedMeanwhile).toBe(0);
    expect(seen?.signal.aborted).toBe(false);
    gate.open();
    expect(await call).toBe(false); // the signal never fired while the call ran
    await closing;
    expect(await lockRows(db)).toEqual([]);
    const log = await logRowsOf(db, dialect);
    expect(log.find((row) => Number(row.stamp) === seen?.stamp)).toMatchObject({ status: 'RELEASED' });
    const taken = await other.locks.tryLocks(['DRAIN_WRITE']);
    expect(taken).toBeGreaterThan(0);
    await other.locks.releaseLocks(taken);
  });

  it('a grant still held outside a locked call at the end of close() is reported lost to its holder first', async () => {
    const app = await createLockApp(db.url, { appId: 'imperative', reaperIntervalMs: 0 });
    const stamp = await app.locks.tryLocks(['LEFT_WRITE']);
    const signal = app.locks.getSignal(stamp);
    await app.close();
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect((signal.reason as Error).message).toMatch(/shut down/);
    expect(app.locks.isHeld(stamp)).toBe(false);
    // Its rows stay (nobody else is granted it) until the app id starts again: that life is provably over then.
    const rowsOfApp = async () => (await lockRows(db)).filter((row) => row.app_id === 'imperative');
    expect(await rowsOfApp()).toHaveLength(1);
    await apps.start(db.url, { appId: 'imperative' });
    expect(await rowsOfApp()).toEqual([]);
    expect((await logRowsOf(db, dialect)).find((row) => Number(row.stamp) === stamp)).toMatchObject({ status: 'RECOVERED' });
  });
});
