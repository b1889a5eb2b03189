import { LockError, type LockService } from 'nestjs-db-locks';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { watchProcess } from '../support/fault-load.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { connectClient, createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const options = { leaseMs: 3000, renewIntervalMs: 250, reaperIntervalMs: 300, waitRecheckMs: 200, queryTimeoutMs: 1000 };
const STORM_MS = 8000;

/**
 * Backends terminated at every moment, a few milliseconds apart, while the instances open connections again and again
 * (statements, the instance session, LISTEN): some are terminated right as their start-up ends, and the server's
 * termination (57P01) reaches the client in the same read as its ReadyForQuery, while `pg-pool` hands it over.
 */
describe('backends terminated as their connections are handed over (PostgreSQL)', () => {
  let db: TestDatabase;
  const apps = trackApps(createLockApp);
  const watcher = watchProcess();
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await apps.closeAll();
    await db.drop();
    watcher.stop();
  });

  it('never crashes the process (no unhandled error event), every failure is a LockError, and both instances grant afterwards', async () => {
    const instances: LockService[] = [];
    for (const appId of ['h1', 'h2']) {
      const url = new URL(db.url);
      url.searchParams.set('application_name', `pool-${appId}`);
      instances.push((await apps.start(url.toString(), { appId, ...options }, 4)).locks);
    }
    const untyped: unknown[] = [];
    let running = true;
    const loop = async (locks: LockService) => {
      while (running) {
        const stamp = await locks.tryLocks(['HANDOVER_WRITE'], { waitMs: 500 }).catch((error: unknown) => {
          if (!(error instanceof LockError)) untyped.push(error);
          return 0;
        });
        if (stamp > 0) await locks.releaseLocks(stamp).catch((error: unknown) => void (error instanceof LockError || untyped.push(error)));
        else await sleep(5);
      }
    };
    const loops = Promise.all(instances.flatMap((locks) => [loop(locks), loop(locks), loop(locks)]));
    const admin = await connectClient(db.url);
    let terminated = 0;
    try {
      const stormUntil = performance.now() + STORM_MS;
      while (performance.now() < stormUntil) {
        const { rows } = await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
             AND (application_name LIKE 'pool-h%' OR application_name LIKE 'nestjs-db-locks h%')`,
        );
        terminated += rows.length;
        await sleep(Math.random() * 10);
      }
    } finally {
      running = false;
      await loops;
      await admin.end();
    }
    expect(watcher.problems).toEqual([]);
    expect(untyped).toEqual([]);
    expect(terminated).toBeGreaterThan(100);
    // Both instances are whole again: each grants and releases.
    for (const locks of instances) {
      let stamp = 0;
      await until(async () => (stamp = await locks.tryLocks(['AFTER_WRITE']).catch(() => 0)) > 0, 15_000);
      await locks.releaseLocks(stamp);
    }
    process.stdout.write(`terminated at handover: ${terminated} backends terminated in ${STORM_MS} ms, no unhandled error\n`);
  }, 60_000);
});
