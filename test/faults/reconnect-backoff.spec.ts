import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { type CapturedLog, createLoggedLockApp } from '../support/logged-lock-app.js';
import { startResetProxy, type ResetProxy } from '../support/reset-proxy.js';
import type { RestartableServer } from '../support/restartable-server.js';
import { until } from '../support/until.js';

const OUTAGE_MS = 5000;
// Long timers, so that what reaches the database during the outage is the listening connection's reconnects: the
// waiters do not re-check on their own timer and one renewal tick at most falls in the outage.
const options = {
  leaseMs: 60_000,
  renewIntervalMs: 4000,
  reaperIntervalMs: 0,
  queryTimeoutMs: 1000,
  waitRecheckMs: 60_000,
};
// The lines of the listening connection.
const LISTENER_LINES = /listening connection|Cannot listen/;

/** The database stopped for 5 s while waiters wait: the listening connection comes back with back-off, said once. */
for (const dialect of DIALECTS) dialect.describeRestartable(`reconnects after a restart on ${dialect.name}`, () => {
  let server: RestartableServer;
  let proxy: ResetProxy;
  let app: LockApp & { log: CapturedLog };
  let holder: LockApp;

  beforeAll(async () => {
    server = await dialect.startRestartable();
    proxy = await startResetProxy(server.url);
    // Nest's logger is process-wide: the holder first, the instance whose lines are counted last.
    holder = await createLockApp(server.url, { appId: 'rc2', ...options });
    app = await createLoggedLockApp(proxy.via(server.url), { appId: 'rc1', ...options }, 6);
  }, 120_000);
  afterAll(async () => {
    await server?.start();
    await Promise.all([app?.close(), holder?.close()]);
    await proxy?.close();
    await server?.destroy();
  });

  it('opens a handful of connections during the outage, logs it once and its end once', async () => {
    const held = await holder.locks.tryLocks(['RC_WRITE']);
    const aborted = new AbortController();
    const waits = [1, 2, 3].map(() =>
      app.locks.tryLocks(['RC_WRITE'], { waitMs: 40_000, signal: aborted.signal }).catch((error: unknown) => error),
    );
    await until(async () => Number((await server.tryQuery<{ n: string }>('SELECT count(*) AS n FROM locking_waiters'))?.[0]?.n) >= 3);
    const linesBefore = app.log.lines.length;
    const acceptedBefore = proxy.accepted;

    await server.stop();
    const stoppedAt = performance.now();
    await sleep(OUTAGE_MS);
    const accepted = proxy.accepted - acceptedBefore;
    const listenerLines = () => app.log.lines.slice(linesBefore).filter((line) => LISTENER_LINES.test(line.message));
    const duringOutage = listenerLines();
    await server.start();
    const outageMs = performance.now() - stoppedAt;
    console.log(`${dialect.name}: ${accepted} connections and ${duringOutage.length} listener lines in a ${Math.round(OUTAGE_MS)} ms outage`);
    // One line when the outage began, not one per try; connections: the listener's few tries, and the statements of
    // the woken waiters and of one renewal tick, each retried a few times (retry.maxAttempts).
    expect(duringOutage.map((line) => line.level)).toEqual(['warn']);
    expect(accepted).toBeLessThanOrEqual(150);

    await until(() => app.log.matching(/back after/).length > 0, 15_000);
    const lines = listenerLines();
    expect(lines.map((line) => line.level)).toEqual(['warn', 'log']);
    expect(lines[1]!.message).toMatch(/back after \d+\.\d s, \d+ attempt\(s\)/);
    const attempts = Number(/(\d+) attempt/.exec(lines[1]!.message)![1]);
    // Back-off from 100 ms doubling up to 2 s, each pause at least half of that (jitter): log2(2000 / 100) tries to
    // reach the cap, then one per second at most (the storm was a try per poll, hundreds a second).
    expect(attempts).toBeLessThanOrEqual(Math.ceil(Math.log2(2000 / 100)) + Math.ceil(outageMs / 1000) + 1);
    console.log(`${dialect.name}: ${lines[1]!.message}`);

    // How the waits end through an outage is another test's (they only had to be there): ended here.
    aborted.abort();
    const outcomes = await Promise.all(waits);
    for (const stamp of outcomes.filter((outcome): outcome is number => typeof outcome === 'number' && outcome > 0)) {
      await app.locks.releaseLocks(stamp);
    }
    await holder.locks.releaseLocks(held);
  }, 90_000);
});
