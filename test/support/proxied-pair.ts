import { createLockApp, type LockApp, type TestLockOptions } from './lock-app.js';
import { startFaultProxy, type FaultProxy } from './tcp-proxy.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** A test database, one instance reaching it through a fault proxy and one reaching it directly. */
export interface ProxiedPair {
  readonly db: TestDatabase;
  readonly proxy: FaultProxy;
  /** The instance behind the proxy (its statements can be reset or stalled). */
  readonly proxied: LockApp;
  /** The instance connected directly. */
  readonly direct: LockApp;
  /** The lock rows of `name`. */
  rowsOf(name: string): Promise<Array<{ stamp: string; app_id: string }>>;
}

/**
 * Starts a `ProxiedPair` before the file's tests (pools of 6) and stops it after them; its fields are read in the
 * tests, once `beforeAll` has run.
 */
export function useProxiedPair(proxiedOptions: TestLockOptions, directOptions: TestLockOptions): ProxiedPair {
  let started: Omit<ProxiedPair, 'rowsOf'> | undefined;
  const get = () => {
    if (!started) throw new Error('useProxiedPair: read its fields in a test, after beforeAll');
    return started;
  };
  beforeAll(async () => {
    const db = await createTestDatabase();
    const proxy = await startFaultProxy(db.url);
    const proxied = await createLockApp(proxy.via(db.url), proxiedOptions, 6);
    const direct = await createLockApp(db.url, directOptions, 6);
    started = { db, proxy, proxied, direct };
  });
  afterAll(async () => {
    if (!started) return;
    await started.proxied.close();
    await started.direct.close();
    await started.proxy.close();
    await started.db.drop();
  });
  return {
    get db() {
      return get().db;
    },
    get proxy() {
      return get().proxy;
    },
    get proxied() {
      return get().proxied;
    },
    get direct() {
      return get().direct;
    },
    rowsOf: (name) => get().db.query('SELECT stamp, app_id FROM locking WHERE lock_name = $1', [name]),
  };
}
