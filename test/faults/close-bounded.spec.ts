import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp } from '../support/lock-app.js';
import { startResetProxy } from '../support/reset-proxy.js';
import type { RestartableServer } from '../support/restartable-server.js';

const options = { leaseMs: 3000, renewIntervalMs: 200, reaperIntervalMs: 500, queryTimeoutMs: 1000 };

/**
 * `app.close()` returns in bounded time whatever state the connections are in (issue 37 item 10).
 *
 * NOT FIXED YET, so skipped: it reproduces the hang. With the network frozen (no reset, no answer) close() did not
 * return within 120 s on PostgreSQL and took 90.5 s on MariaDB. The hang is in `LockService.onModuleDestroy` →
 * `LockAcquisitions.close()`, which awaits the wait under way: its next statement needs a new pool connection, and
 * `pool.connect()` in `PostgresStatementRunner.send` (pg's default `connectionTimeoutMillis` is 0: no limit) never
 * settles; on MariaDB each connect waits mysql2's 10 s `connectTimeout`, times the statement retries. Bounding the
 * connection's acquisition by `queryTimeoutMs` in both runners (and bounding the shutdown awaits) is the fix to make.
 */
const describeUnfixed = (name: string, body: () => void) => describe.skip(name, body);
for (const dialect of DIALECTS) (dialect.describeRestartable === describe ? describeUnfixed : describe.skip)(`closing with a frozen network on ${dialect.name}`, () => {
  let server: RestartableServer;
  beforeAll(async () => {
    server = await dialect.startRestartable();
  }, 120_000);
  afterAll(async () => {
    await server?.start();
    await server?.destroy();
  });

  it('closes within a bound with every connection frozen, a grant held and a wait under way', async () => {
    const proxy = await startResetProxy(server.url);
    const app = await createLockApp(proxy.via(server.url), { appId: 'cb1', ...options }, 6);
    const held = await app.locks.tryLocks(['CB_WRITE']);
    expect(held).toBeGreaterThan(0);
    const wait = app.locks.tryLocks(['CB_WRITE'], { waitMs: 60_000 }).catch((error: unknown) => error);
    await sleep(300);
    proxy.freeze();
    await sleep(3 * options.renewIntervalMs);
    const started = performance.now();
    await app.close();
    const closedInMs = performance.now() - started;
    await wait;
    await proxy.close();
    console.log(`${dialect.name}: closed in ${Math.round(closedInMs)} ms with a frozen network`);
    expect(closedInMs).toBeLessThan(3 * options.queryTimeoutMs + 2000);
  }, 120_000);
});
