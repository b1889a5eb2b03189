import { startLingeringProxy, type LingeringProxy } from '../support/lingering-proxy.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** How long the server goes on running a session after its client is gone (the proxies' delay). */
const LINGER_MS = 8000;

const APP_ID = 'tenant-app';
const options = { appId: APP_ID, leaseMs: 5000, renewIntervalMs: 200, reaperIntervalMs: 0 };

/**
 * The instance locks of app id $1 in every database of the server, in the order of `pg_locks` (which a lookup with
 * no condition on the database took the first of): the key the library takes, `hashtextextended(appId, namespace)`.
 */
const INSTANCE_LOCKS_EVERYWHERE = `SELECT l.database::int AS db FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
    AND l.classid = ((hashtextextended($1, 1819240297) >> 32) & 4294967295)::oid
    AND l.objid = (hashtextextended($1, 1819240297) & 4294967295)::oid`;

/** A database of the suite's server, reached through a lingering proxy of its own, and its instance of `APP_ID`. */
interface Tenant {
  readonly db: TestDatabase;
  readonly proxy: LingeringProxy;
  readonly oid: number;
  app?: LockApp;
}

/**
 * Two databases of one PostgreSQL server, each running an instance with the same `appId` (staging beside
 * production, a database per tenant, a test database): an advisory lock is its database's own, so neither instance
 * is the other's twin, and the lookup of an app id's holder (its own old session, still on the server) looks only in
 * its own database. Before the fix it took whichever row `pg_locks` gave first (issue 48 item 7): a same-process
 * restart was refused with `AppIdInUseError`, and an instance whose connection was cut was fenced for good, naming a
 * backend of the other database. Each case acts on the database whose row `pg_locks` does not give first, so that the
 * old lookup finds the other one.
 */
describe('the same appId in two databases of one PostgreSQL server', () => {
  const tenants: Tenant[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const db = await createTestDatabase();
      const [row] = await db.query<{ oid: number }>(
        'SELECT oid::int AS oid FROM pg_database WHERE datname = current_database()',
      );
      tenants.push({ db, proxy: await startLingeringProxy(db.url, LINGER_MS), oid: row!.oid });
    }
    // Both run for the whole file: each case restarts or cuts one of them only.
    for (const tenant of tenants) await startIn(tenant);
  });
  afterAll(async () => {
    for (const { app, proxy, db } of tenants) {
      await app?.close();
      await proxy.close();
      await db.drop();
    }
  });

  const url = (tenant: Tenant) => tenant.proxy.via(tenant.db.url);
  const startIn = async (tenant: Tenant) => (tenant.app = await createLockApp(url(tenant), options));

  /** The tenant whose instance lock `pg_locks` does not give first, once both hold theirs. */
  async function notFirstInPgLocks(): Promise<Tenant> {
    const rows = await tenants[0]!.db.query<{ db: number }>(INSTANCE_LOCKS_EVERYWHERE, [APP_ID]);
    expect(rows.map((row) => row.db).sort()).toEqual(tenants.map((tenant) => tenant.oid).sort());
    return tenants.find((tenant) => tenant.oid !== rows[0]!.db)!;
  }

  it('starts in both databases, and each grants the same lock name', async () => {
    for (const { app } of tenants) {
      const stamp = await app!.locks.tryLocks(['LEDGER_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      await app!.locks.releaseLocks(stamp);
      expect((await app!.locks.getHealth()).appIdHeld).toBe(true);
    }
  });

  it('restarts at once in one database (its closed session still held), not refused for the other', async () => {
    for (let life = 1; life <= 3; life++) {
      const restarted = await notFirstInPgLocks();
      await restarted.app!.close();
      restarted.app = undefined;
      // Within LINGER_MS of the close: the server still holds the app id for the closed session.
      await startIn(restarted);
      const stamp = await restarted.app!.locks.tryLocks(['LEDGER_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      await restarted.app!.locks.releaseLocks(stamp);
    }
  }, 60_000);

  it('takes its appId back after a cut, not fenced for the other database, its grant kept', async () => {
    const cut = await notFirstInPgLocks();
    const locks = cut.app!.locks;
    const stamp = await locks.tryLocks(['KEPT_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    const signal = locks.getSignal(stamp);
    // The client sees its connections end; the server goes on running its sessions (the app id's among them).
    cut.proxy.cutClients();
    // The acquisition takes the app id back first (ending its own old session), then grants.
    const after = await locks.tryLocks(['AFTER_CUT_WRITE'], { waitMs: 5000 });
    expect(after).toBeGreaterThan(0);
    await locks.releaseLocks(after);
    expect(signal.aborted).toBe(false);
    expect(locks.isHeld(stamp)).toBe(true);
    expect((await locks.getHealth()).appIdHeld).toBe(true);
    await locks.releaseLocks(stamp);
    // The other database's instance was not touched.
    const other = tenants.find((tenant) => tenant !== cut)!;
    expect((await other.app!.locks.getHealth()).appIdHeld).toBe(true);
  }, 60_000);
});
