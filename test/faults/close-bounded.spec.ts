import { LockLostError, LockShutdownError, LockStoreError } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type QueryRunner } from 'typeorm';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startResetProxy } from '../support/reset-proxy.js';
import { useRestartableServer } from '../support/restartable-server.js';
import { until } from '../support/until.js';

const options = { leaseMs: 3000, renewIntervalMs: 200, reaperIntervalMs: 0, queryTimeoutMs: 1000 };

/** The bound docs/faults.md states for `app.close()` with no locked call running: 1 s + 4 × `queryTimeoutMs`. */
const BOUND_MS = 1000 + 4 * options.queryTimeoutMs;

/** Slack for a loaded 2-core machine (the code before the fix did not return within a minute). */
const SLACK_MS = 4000;

/** What a holder and a waiter of the closing instance saw, and how long `close()` took. */
interface Closed {
  readonly closedInMs: number;
  readonly waitEnd: unknown;
  readonly heldSignal: AbortSignal;
  readonly stamp: number;
}

/**
 * `app.close()` returns in bounded time whatever state the connections are in (issue 37 item 10): frozen mid-statement
 * (no reset, no answer), the database stopped, the pool exhausted by the application, with a grant held, a wait under
 * way and a release failing. The code before the fix hung in `LockAcquisitions.close()`, awaiting a wait whose next
 * statement waited for a pool connection without limit (`pg`), or for each retry's 10 s `connectTimeout` (mysql2).
 */
for (const dialect of DIALECTS) dialect.describeRestartable(`app.close() under faults on ${dialect.name}`, () => {
  const server = useRestartableServer(dialect.startRestartable);
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  beforeAll(() => void process.on('unhandledRejection', onRejection));
  afterAll(() => void process.off('unhandledRejection', onRejection));

  /** Holds `name`, starts a wait for it, lets `fault` happen, then closes and tells what each side saw. */
  async function closeDuring(app: LockApp, name: string, fault: () => Promise<void>): Promise<Closed> {
    const stamp = await app.locks.tryLocks([`${name}_WRITE`]);
    expect(stamp).toBeGreaterThan(0);
    const heldSignal = app.locks.getSignal(stamp);
    const wait = app.locks.tryLocks([`${name}_WRITE`], { waitMs: 60_000 }).catch((error: unknown) => error);
    // The wait has registered: its rows are in the database.
    await until(async () => ((await server().tryQuery(`SELECT waiter FROM locking_waiters WHERE lock_name = '${name}'`))?.length ?? 0) > 0);
    await fault();
    const started = performance.now();
    await app.close();
    const closedInMs = performance.now() - started;
    console.log(`${dialect.name}, ${name}: app.close() in ${Math.round(closedInMs)} ms`);
    return { closedInMs, waitEnd: await wait, heldSignal, stamp };
  }

  /** Each side was told, in time. */
  function expectTold({ closedInMs, waitEnd, heldSignal }: Closed): void {
    expect(closedInMs).toBeLessThan(BOUND_MS + SLACK_MS);
    expect(waitEnd).toBeInstanceOf(LockShutdownError);
    expect(heldSignal.aborted).toBe(true);
    expect(heldSignal.reason).toBeInstanceOf(LockLostError);
  }

  /**
   * Once the database answers: the waiter rows the ended wait could not remove have expired (they count for nobody),
   * and the held grant, neither renewed nor released, is freed by another instance's reaper once its lease ends.
   */
  async function expectNothingLeft(name: string, stamp: number): Promise<void> {
    const now = dialect.name === 'PostgreSQL' ? 'now()' : 'UTC_TIMESTAMP(6)';
    const live = () => server().tryQuery(`SELECT waiter FROM locking_waiters WHERE lock_name = '${name}' AND expires > ${now}`);
    await until(async () => (await live())?.length === 0, 15_000);
    const next = await createLockApp(server().url, { appId: `${name.toLowerCase()}-next`, reaperIntervalMs: 200 });
    try {
      const taken = await next.locks.tryLocks([`${name}_WRITE`], { waitMs: 3 * options.leaseMs });
      expect(taken).toBeGreaterThan(stamp);
      await next.locks.releaseLocks(taken);
    } finally {
      await next.close();
    }
    expect(await server().tryQuery(`SELECT stamp FROM locking WHERE lock_name = '${name}'`)).toEqual([]);
  }

  it('closes within the bound with every connection frozen mid-statement', async () => {
    const proxy = await startResetProxy(server().url);
    try {
      const app = await createLockApp(proxy.via(server().url), { appId: 'frozen', ...options }, 6);
      const closed = await closeDuring(app, 'CBF', async () => {
        void proxy.freeze(); // until the proxy closes: no reset, no answer
        await sleep(3 * options.renewIntervalMs); // statements are under way on the frozen connections
      });
      expectTold(closed);
      await proxy.close();
      await expectNothingLeft('CBF', closed.stamp);
    } finally {
      await proxy.close().catch(() => undefined);
    }
  }, 120_000);

  it('closes within the bound with the database stopped and a release failing', async () => {
    const app = await createLockApp(server().url, { appId: 'stopped', ...options }, 6);
    const other = await app.locks.tryLocks(['CBS_OTHER_WRITE']);
    let released: unknown;
    const closed = await closeDuring(app, 'CBS', async () => {
      await server().stop();
      released = await app.locks.releaseLocks(other).catch((error: unknown) => error);
    });
    expect(released).toBeInstanceOf(LockStoreError);
    expectTold(closed);
    await server().start();
    await expectNothingLeft('CBS', closed.stamp);
    await expectNothingLeft('CBS_OTHER', other);
  }, 120_000);

  it('closes within the bound with the pool exhausted by the application', async () => {
    const app = await createLockApp(server().url, { appId: 'exhausted', ...options }, 4);
    const runners: QueryRunner[] = [];
    const closed = await closeDuring(app, 'CBE', async () => {
      // The lock module keeps the instance session (and on PostgreSQL the LISTEN one): the rest is the app's, for good.
      const dataSource = app.app.get(DataSource);
      const kept = dialect.name === 'PostgreSQL' ? 2 : 1;
      for (let i = kept; i < 4; i++) {
        const runner = dataSource.createQueryRunner();
        runners.push(runner);
        await runner.query('SELECT 1');
      }
      await sleep(3 * options.renewIntervalMs);
    });
    expectTold(closed);
    await Promise.all(runners.map((runner) => runner.release().catch(() => undefined)));
    await expectNothingLeft('CBE', closed.stamp);
  }, 120_000);

  afterAll(() => {
    // No rejection went unhandled (a checkout given up on and settling later, a wait's clean-up after close()).
    expect(rejections).toEqual([]);
  });
});
