import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startHolder } from '../support/holder-process.js';
import { watchProcess } from '../support/fault-load.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const LEASE_MS = 1500;
const REAPER_MS = 300;

/** A holder in a process of its own, frozen with SIGSTOP past its lease (a GC pause, a stuck VM, a debugger). */
describe('a frozen holder', () => {
  let db: TestDatabase;
  let watcher: LockApp;
  const process_ = watchProcess();

  beforeAll(async () => {
    db = await createTestDatabase();
    watcher = await createLockApp(db.url, { appId: 'taker', reaperIntervalMs: REAPER_MS });
  });
  afterAll(async () => {
    await watcher.close();
    await db.drop();
    process_.stop();
  });

  it('loses its grant to another instance, and knows it the moment it wakes, before its timers run', async () => {
    const holder = startHolder({
      DATABASE_URL: db.url,
      APP_ID: 'sleeper',
      LOCKS: 'FROZEN_WRITE',
      LEASE_MS: String(LEASE_MS),
      RENEW_MS: '250',
    });
    try {
      const { stamp } = await holder.next('held');
      holder.send('check');
      expect(await holder.next('state')).toMatchObject({ held: true });
      holder.child.kill('SIGSTOP');
      let taken = 0;
      await until(async () => (taken = await watcher.locks.tryLocks(['FROZEN_WRITE'])) > 0, LEASE_MS + REAPER_MS + 3000);
      expect(taken).toBeGreaterThan(Number(stamp)); // a larger fencing token
      // Woken: its first question already has the right answer, and its signal fires.
      holder.send('check');
      holder.child.kill('SIGCONT');
      expect(await holder.next('state')).toMatchObject({ held: false });
      expect(await holder.next('signal')).toMatchObject({ reason: 'LockLostError' });
      await watcher.locks.releaseLocks(taken);
    } finally {
      holder.child.kill('SIGCONT');
      await holder.kill();
    }
    expect(await db.query(`SELECT status FROM locking_log WHERE lock_names = '{FROZEN}' ORDER BY stamp`)).toEqual([
      { status: 'REAPED' },
      { status: 'RELEASED' },
    ]);
    expect(process_.problems).toEqual([]);
  });
});
