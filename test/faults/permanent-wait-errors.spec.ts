import { LockStoreError } from 'nestjs-db-locks';
import mysql from 'mysql2/promise';
import { canStartMariadb, startRestartableMariadb, type RestartableServer } from '../support/restartable-server.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { isTransientStoreFault } from '../../lib/store/transient-fault.util.js';
import { until } from '../support/until.js';

const WAIT_MS = 30_000;
const options = { waitRecheckMs: 200, queryTimeoutMs: 2000, reaperIntervalMs: 0 };

/** What the test takes back. */
type Revoked = 'routines' | 'waiter inserts';

/** A database where a login of its own, with only the privileges the library needs, can lose them mid-wait. */
interface RestrictedLogin {
  /** The database's URL, as the restricted login. */
  readonly url: string;
  /**
   * Takes privileges back from the login (effective at its next statement): EXECUTE on the lock routines (its
   * attempts fail), or INSERT and UPDATE on `locking_waiters` (its registrations fail; its attempts, which only read
   * the waiters of a name they cannot take, go on).
   */
  revoke(what: Revoked): Promise<void>;
  /** The waiter rows on `name`. */
  waiterRows(name: string): Promise<number>;
}

/**
 * A wait that meets a store error that will not pass by itself (here: the privileges on the lock tables and routines
 * revoked while it waits, a real 42501 / 1142 / 1370 of the server) ends at once with it, typed: waiting on would
 * only turn it into a quiet "not acquired" at the deadline. Transient faults still wait through (waits-through-outages.spec).
 */
function permanentErrorEndsTheWait(open: () => Promise<RestrictedLogin>, adminUrl: () => string) {
  const apps = trackApps(createLockApp);
  afterEach(() => apps.closeAll());

  for (const [what, step] of [['routines', 'attempts'], ['waiter inserts', 'registrations']] as const) {
    it(`a wait whose ${step} are refused for good ends at once with the typed store error`, async () => {
      const login = await open();
      const holder = await apps.start(adminUrl(), { appId: 'holder', ...options });
      const waiter = await apps.start(login.url, { appId: 'waiter', ...options });
      const held = await holder.locks.tryLocks(['PERM_WRITE']);
      expect(held).toBeGreaterThan(0);
      const startedAt = performance.now();
      const wait = waiter.locks.tryLocks(['PERM_WRITE'], { waitMs: WAIT_MS }).then(
        (stamp) => ({ stamp, endedAt: performance.now() }),
        (error: unknown) => ({ error, endedAt: performance.now() }),
      );
      await until(async () => (await login.waiterRows('PERM')) > 0);
      await login.revoke(what);
      const ended = await wait;
      expect(ended).toHaveProperty('error');
      const error = (ended as { error: unknown }).error;
      expect(error).toBeInstanceOf(LockStoreError);
      expect(isTransientStoreFault(error)).toBe(false);
      expect((error as LockStoreError).outcomeUnknown).toBe(false);
      // Long before its deadline (the wait does not sit out its 30 s): generous slack for a loaded machine.
      expect(ended.endedAt - startedAt).toBeLessThan(WAIT_MS / 2);
      await holder.locks.releaseLocks(held);
    }, 60_000);
  }
}

describe('a permanent store error ends a wait on PostgreSQL', () => {
  let db: TestDatabase;
  const roles: string[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const role of roles) {
      await db.query(`DROP OWNED BY ${role}`).catch(() => undefined);
      await db.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    }
    await db.drop();
  });
  permanentErrorEndsTheWait(
    async () => {
      const role = `ndl_perm_${process.pid}_${roles.length}`;
      roles.push(role);
      await db.query(`CREATE ROLE ${role} LOGIN PASSWORD 'perm'`);
      await db.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
      await db.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
      await db.query(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO ${role}`);
      const url = new URL(db.url);
      url.username = role;
      url.password = 'perm';
      return {
        url: url.toString(),
        async revoke(what) {
          if (what === 'routines') await db.query(`REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC, ${role}`);
          else await db.query(`REVOKE INSERT, UPDATE ON locking_waiters FROM ${role}`);
        },
        async waiterRows(name) {
          return (await db.query(`SELECT waiter FROM locking_waiters WHERE lock_name = $1`, [name])).length;
        },
      };
    },
    () => db.url,
  );
});

(canStartMariadb() ? describe : describe.skip)('a permanent store error ends a wait on MariaDB', () => {
  let server: RestartableServer;
  let users = 0;
  beforeAll(async () => {
    server = await startRestartableMariadb(['--grant-tables']);
  }, 120_000);
  afterAll(() => server?.destroy());
  const admin = async <R>(sql: string): Promise<R> => {
    const connection = await mysql.createConnection({ uri: server.url });
    try {
      return (await connection.query(sql))[0] as R;
    } finally {
      await connection.end();
    }
  };
  permanentErrorEndsTheWait(
    async () => {
      const user = `ndl_perm_${users++}`;
      await admin(`CREATE USER '${user}'@'%' IDENTIFIED BY 'perm'`);
      // Table and routine privileges (those of a database would hold for a session until its next USE).
      const tables = await admin<{ name: string }[]>(`SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'locks'`);
      const routines = await admin<{ name: string; type: string }[]>(
        `SELECT ROUTINE_NAME AS name, ROUTINE_TYPE AS type FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'locks'`,
      );
      for (const { name } of tables) await admin(`GRANT SELECT, INSERT, UPDATE, DELETE ON locks.\`${name}\` TO '${user}'@'%'`);
      for (const { name, type } of routines) await admin(`GRANT EXECUTE ON ${type} locks.\`${name}\` TO '${user}'@'%'`);
      const url = new URL(server.url);
      url.username = user;
      url.password = 'perm';
      url.hostname = '127.0.0.1';
      return {
        url: url.toString(),
        async revoke(what) {
          if (what === 'waiter inserts') await admin(`REVOKE INSERT, UPDATE ON locks.locking_waiters FROM '${user}'@'%'`);
          else for (const { name, type } of routines) await admin(`REVOKE EXECUTE ON ${type} locks.\`${name}\` FROM '${user}'@'%'`);
        },
        async waiterRows(name) {
          return (await admin<unknown[]>(`SELECT waiter FROM locks.locking_waiters WHERE lock_name = '${name}'`)).length;
        },
      };
    },
    () => server.url,
  );
});
