import { LockError, LockServerReadOnlyError, LockStartupTimeoutError } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { RestartableServer } from '../support/restartable-server.js';
import { debianPostgresBin, startStandbyCluster, type StandbyCluster } from '../support/standby-cluster.js';
import { until } from '../support/until.js';

const options = { leaseMs: 20_000, renewIntervalMs: 200, reaperIntervalMs: 0, queryTimeoutMs: 1000, startupTimeoutMs: 1500 };

/** What a read-only server looks like from the instance: unhealthy with the reason, no app id, grants refused typed. */
async function expectReadOnlyRefusal(app: LockApp, appIdHeldOnServer: () => Promise<number>): Promise<void> {
  await until(async () => {
    const health = await app.locks.getHealth();
    return !health.healthy && !health.appIdHeld && health.problems.some((problem) => /read-only|may not write/.test(problem));
  }, 8000);
  expect(await appIdHeldOnServer()).toBe(0);
  const refused = await app.locks.tryLocks(['RO_NEW_WRITE']).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(LockServerReadOnlyError);
  expect(refused).toBeInstanceOf(LockError);
  // Still refused after a renewal tick or two: the app id is not taken back on the read-only server.
  await new Promise((resolve) => setTimeout(resolve, 3 * options.renewIntervalMs));
  expect(await appIdHeldOnServer()).toBe(0);
  expect((await app.locks.getHealth()).appIdHeld).toBe(false);
}

/** After the server accepts writes again: healthy, the app id held, a new grant given. */
async function expectRecovery(app: LockApp, appIdHeldOnServer: () => Promise<number>): Promise<void> {
  await until(async () => (await app.locks.getHealth()).healthy, 8000);
  expect(await appIdHeldOnServer()).toBe(1);
  const stamp = await app.locks.tryLocks(['RO_NEW_WRITE']);
  expect(stamp).toBeGreaterThan(0);
  await app.locks.releaseLocks(stamp);
}

/** A server made read-only for real while an instance runs on it, then writable again. */
for (const dialect of DIALECTS) dialect.describeRestartable(`a read-only server on ${dialect.name}`, () => {
  let server: RestartableServer;
  let app: LockApp;
  const postgres = dialect.name === 'PostgreSQL';
  const setReadOnly = async (on: boolean) => {
    const done = postgres
      ? (await server.tryQuery(`ALTER SYSTEM SET default_transaction_read_only = ${on ? 'on' : 'off'}`)) &&
        (await server.tryQuery('SELECT pg_reload_conf()'))
      : await server.tryQuery(`SET GLOBAL read_only = ${on ? 'ON' : 'OFF'}`);
    if (!done) throw new Error('the server did not take the setting');
  };
  const appIdHeld = () => server.appIdsHeld(['ro1']);

  beforeAll(async () => {
    server = await dialect.startRestartable();
    app = await createLockApp(server.url, { appId: 'ro1', ...options });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await server?.destroy();
  });

  it('makes the instance unhealthy, holds no app id there, refuses grants typed, and recovers once writable', async () => {
    const held = await app.locks.tryLocks(['RO_HELD_WRITE']);
    expect(held).toBeGreaterThan(0);
    expect((await app.locks.getHealth()).healthy).toBe(true);

    await setReadOnly(true);
    await expectReadOnlyRefusal(app, appIdHeld);
    const health = await app.locks.getHealth();
    expect(health.database).toBe('read-only');

    await setReadOnly(false);
    await expectRecovery(app, appIdHeld);
  }, 60_000);

  it('start-up on a read-only server waits for it within startupTimeoutMs, then fails naming the option', async () => {
    await setReadOnly(true);
    try {
      const started = performance.now();
      const failed = await createLockApp(server.url, { appId: 'ro2', ...options }).catch((error: unknown) => error);
      expect(failed).toBeInstanceOf(LockStartupTimeoutError);
      expect((failed as Error).message).toContain('startupTimeoutMs');
      expect((failed as Error).cause).toBeInstanceOf(LockServerReadOnlyError);
      expect(performance.now() - started).toBeGreaterThanOrEqual(options.startupTimeoutMs);
      expect(await server.appIdsHeld(['ro2'])).toBe(0);
    } finally {
      await setReadOnly(false);
    }
  }, 60_000);
});

const bin = debianPostgresBin();
const describeWithStandby = bin ? describe : describe.skip;

/**
 * A proxy (HAProxy during a Patroni demotion) that routes to a real standby for a while: the instance's connections
 * are reset and it reconnects to the read-only node, then the proxy moves back to the primary.
 */
describeWithStandby('a proxy routing to a standby (PostgreSQL)', () => {
  let cluster: StandbyCluster;
  let app: LockApp;
  // The sessions of the instance that hold an advisory lock (its app id's: advisory locks work on a standby too). Not
  // every session named for it: a renewal tick's claim connects, finds the server read-only and disconnects, and a
  // sample that falls in those milliseconds saw one (CI, once).
  const appIdHeld = async () =>
    Number(
      (
        await cluster.tryQuery<{ n: number }>(
          `SELECT count(DISTINCT a.pid)::int AS n FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
            WHERE a.application_name LIKE 'nestjs-db-locks sb1 %' AND l.locktype = 'advisory' AND l.granted`,
        )
      )?.[0]?.n ?? -1,
    );

  beforeAll(async () => {
    cluster = await startStandbyCluster(bin!);
    app = await createLockApp(cluster.url, { appId: 'sb1', ...options }, 6);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await cluster?.destroy();
  });

  it('holds no app id on the standby, is unhealthy with the reason, refuses grants typed, recovers on the primary', async () => {
    expect((await app.locks.getHealth()).healthy).toBe(true);
    cluster.routeToStandby();
    await expectReadOnlyRefusal(app, appIdHeld);
    expect(await cluster.tryQuery(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory'`)).toEqual([]);
    cluster.routeToPrimary();
    await expectRecovery(app, appIdHeld);
  }, 60_000);
});
