import { AppIdInUseError, LockLostError } from 'nestjs-db-locks';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** The connection id holding app id `appId`'s instance lock (null when none). */
const HOLDER = (appId: string) => `SELECT IS_USED_LOCK(CONCAT('nestjs-db-locks:', LEFT(SHA2(CONCAT(DATABASE(), CHAR(0), '${appId}'), 256), 48))) AS id`;

/** The server ends an instance's kept session (KILL, as `wait_timeout` or an operator would). */
describeOnMysql('MySQL/MariaDB: the instance session ended by the server', () => {
  let db: TestDatabase;
  const apps = trackApps(createLockApp);
  const holderOf = async (appId: string) => (await db.query<{ id: number | null }>(HOLDER(appId)))[0]?.id ?? null;
  const kill = (id: number) => db.query(`KILL CONNECTION ${Number(id)}`);

  beforeAll(async () => {
    db = await createMysqlTestDatabase();
  });
  afterEach(() => apps.closeAll());
  afterAll(() => db?.drop());

  it('takes its app id back on a new session; its grants are kept, and it grants again', async () => {
    const one = await apps.start(db.url, { appId: 'k1', leaseMs: 9000, renewIntervalMs: 200 });
    const kept = await one.locks.tryLocks(['KEPT_WRITE']);
    const before = await holderOf('k1');
    expect(before).not.toBeNull();
    await kill(before!);
    await until(async () => {
      const now = await holderOf('k1');
      return now !== null && now !== before;
    }, 5000);
    expect(one.locks.getSignal(kept).aborted).toBe(false);
    expect(one.locks.isHeld(kept)).toBe(true);
    expect(await one.locks.tryLocks(['AFTER_WRITE'])).toBeGreaterThan(kept);
  });

  it('is fenced and told before a twin that took its app id while it was disconnected gets its locks', async () => {
    const first = await apps.start(db.url, { appId: 'twin', leaseMs: 3000, renewIntervalMs: 1000, reaperIntervalMs: 0 });
    const stamp = await first.locks.tryLocks(['TWIN_WRITE']);
    const signal = first.locks.getSignal(stamp);
    await kill((await holderOf('twin'))!);
    // The twin cannot prove the first instance gone (it still runs): its start-up recovery frees nothing.
    const twin = await apps.start(db.url, { appId: 'twin', reaperIntervalMs: 50 });
    expect(await db.query(`SELECT 1 FROM locking WHERE lock_name = 'TWIN'`)).toHaveLength(1);
    let taken = 0;
    let toldFirst: boolean | undefined;
    const deadline = performance.now() + 8000;
    while (taken === 0 && performance.now() < deadline) {
      taken = await twin.locks.tryLocks(['TWIN_WRITE']);
      if (taken > 0) toldFirst = signal.aborted && !first.locks.isHeld(stamp);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(taken).toBeGreaterThan(stamp);
    expect(toldFirst).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect((signal.reason as LockLostError).reason).toMatch(/another instance took app id "twin"/);
    await expect(first.locks.tryLocks(['OTHER_WRITE'])).rejects.toThrow(AppIdInUseError);
    expect(await db.query(`SELECT 1 FROM locking WHERE lock_name = 'OTHER'`)).toEqual([]);
  });
});
