import { Module, type DynamicModule } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  LockModule,
  LockService,
  LockStartupTimeoutError,
  LockStoreError,
  type LockModuleOptions,
} from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { CapturedLog } from '../support/logged-lock-app.js';
import { startResetProxy } from '../support/reset-proxy.js';
import { socketsTo, startSilentServer, type SilentServer } from '../support/silent-server.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** The start-up budget of these tests (ms); `queryTimeoutMs` keeps its default (10 s), longer than the budget. */
const BUDGET_MS = 1500;

/** What docs/options.md promises (at most 2 × `startupTimeoutMs`), and slack for a loaded 2-core machine. */
const BOUND_MS = 2 * BUDGET_MS + 3000;

/** The timers of this process that keep it alive. */
function timers(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
}

/** How an application's start-up ended: its error (or the context it started), how long it took, its log. */
interface StartOutcome {
  readonly failure?: unknown;
  readonly stillStarting: boolean;
  readonly ms: number;
  readonly log: CapturedLog;
  /** The started application's `LockService`, when it started. */
  readonly locks?: LockService;
  /** Closes what the start-up left open (the module, whether or not its init failed). */
  close(): Promise<void>;
}

/**
 * Compiles and inits an application importing `lock` (and the schedule), as `NestFactory.create` + `app.init()` would,
 * with its log captured from the compile on; gives up watching after `BOUND_MS + 5000` (the code before the fix was
 * still starting after 150 s).
 */
async function start(lock: DynamicModule): Promise<StartOutcome> {
  @Module({ imports: [ScheduleModule.forRoot(), lock] })
  class AppModule {}
  const log = new CapturedLog();
  const began = performance.now();
  let moduleRef: Awaited<ReturnType<ReturnType<typeof Test.createTestingModule>['compile']>> | undefined;
  const started = (async () => {
    moduleRef = await Test.createTestingModule({ imports: [AppModule] }).setLogger(log).compile();
    await moduleRef.init();
  })().then(
    () => ({ failure: undefined }),
    (failure: unknown) => ({ failure }),
  );
  const watching = new AbortController();
  const gaveUp = sleep(BOUND_MS + 5000, undefined, { signal: watching.signal }).catch(() => undefined);
  const outcome = await Promise.race([started, gaveUp.then(() => undefined)]);
  watching.abort();
  const ms = performance.now() - began;
  const failure = outcome?.failure;
  return {
    failure,
    stillStarting: outcome === undefined,
    ms,
    log,
    locks: outcome !== undefined && failure === undefined ? moduleRef?.get(LockService) : undefined,
    close: async () => {
      await moduleRef?.close().catch(() => undefined);
    },
  };
}

/** The start-up failed with `LockStartupTimeoutError` within the bound, saying in a log line what it waited for. */
function expectTimedOut(outcome: StartOutcome, waitingFor: RegExp): LockStartupTimeoutError {
  expect(outcome.stillStarting).toBe(false);
  expect(outcome.failure).toBeInstanceOf(LockStartupTimeoutError);
  const error = outcome.failure as LockStartupTimeoutError;
  expect(error.timeoutMs).toBe(BUDGET_MS);
  expect(error.waitingFor).toMatch(waitingFor);
  expect(error.cause).toBeInstanceOf(LockStoreError);
  expect(outcome.ms).toBeGreaterThanOrEqual(BUDGET_MS - 50);
  expect(outcome.ms).toBeLessThan(BOUND_MS);
  const waits = outcome.log.matching(/^Start-up waits for the database: /);
  expect(waits).toHaveLength(1);
  expect(waits[0]).toMatch(waitingFor);
  expect(waits[0]).toMatch(/has had no answer for \d+ ms; start-up gives up in \d+ ms .*startupTimeoutMs/);
  return error;
}

/**
 * Start-up against a server that accepts TCP connections and never answers (a hung server, a proxy whose backend is
 * gone, a firewall that lets the handshake through): every connection attempt is bounded by what is left of
 * `startupTimeoutMs`, so that start-up ends with `LockStartupTimeoutError` within the 2 × `startupTimeoutMs`
 * docs/options.md promises, says in a log line what it waits for, and leaves no connection, socket or timer behind
 * (issue 48 item 6: on PostgreSQL the application was still starting after 150 s, with nothing logged).
 */
describe('start-up against a server that accepts connections and never answers', () => {
  let silent: SilentServer;
  /** The timers running when the test began (Jest's own among them). */
  let timersBefore: number;
  beforeEach(async () => {
    silent = await startSilentServer();
  });
  afterEach(async () => {
    await silent.close();
  });

  /** Nothing of the start-up is left: each connection it opened is closed (both sides), no timer of it runs. */
  async function expectNothingLeft(): Promise<void> {
    expect(silent.accepted).toBeGreaterThan(0);
    await until(() => silent.open === 0 && socketsTo(silent.port).length === 0, 3000);
    await until(() => timers() <= timersBefore, 3000);
  }

  /**
   * Starts an application with `lock` and expects it to give up with `LockStartupTimeoutError` while waiting for
   * `waitingFor` (within 2 × startupTimeoutMs, one log line), closed, with nothing of it left.
   */
  async function expectGivesUp(lock: DynamicModule, waitingFor: RegExp): Promise<void> {
    timersBefore = timers();
    const outcome = await start(lock);
    try {
      expectTimedOut(outcome, waitingFor);
    } finally {
      await outcome.close();
    }
    await expectNothingLeft();
  }

  const pgUrl = () => `postgres://locks:secret@127.0.0.1:${silent.port}/locks`;

  it('PostgreSQL, forRoot({ url }): LockStartupTimeoutError within 2 × startupTimeoutMs, nothing left', async () => {
    await expectGivesUp(
      LockModule.forRoot({ appId: 'silent-pg', url: pgUrl(), startupTimeoutMs: BUDGET_MS }),
      /the first connection of the lock DataSource \(LockModule option url\)/,
    );
  }, 30_000);

  it('PostgreSQL, forRootAsync({ ownConnection: true }): the same', async () => {
    const lock = LockModule.forRootAsync({
      ownConnection: true,
      useFactory: async (): Promise<LockModuleOptions> => ({
        appId: 'silent-async',
        url: pgUrl(),
        startupTimeoutMs: BUDGET_MS,
      }),
    });
    await expectGivesUp(lock, /the first connection of the lock DataSource/);
  }, 30_000);

  it('MySQL/MariaDB, forRoot({ url }): the same (the driver is enough: no server is needed)', async () => {
    const url = `mysql://locks:secret@127.0.0.1:${silent.port}/locks`;
    await expectGivesUp(
      LockModule.forRoot({ appId: 'silent-my', url, startupTimeoutMs: BUDGET_MS }),
      /the first connection of the lock DataSource \(LockModule option url\)/,
    );
  }, 30_000);

  describe('PostgreSQL, directUrl on the silent server, url on a database that answers', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(async () => {
      await db?.drop();
    });

    /** The library's connections to `db`, from the server's side. */
    const libraryConnections = async () =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE 'nestjs-db-locks silent-direct %'`,
        )
      )[0]!.n;

    it('the pooler check of directUrl gives up within 2 × startupTimeoutMs; close() leaves nothing open', async () => {
      const directUrl = `postgres://127.0.0.1:${silent.port}/`;
      await expectGivesUp(
        LockModule.forRoot({ appId: 'silent-direct', url: db.url, directUrl, startupTimeoutMs: BUDGET_MS }),
        /the server check/,
      );
      await until(async () => (await libraryConnections()) === 0, 3000);
    }, 30_000);

    it('(the same check passes with a directUrl that answers, and the instance grants)', async () => {
      const options = { appId: 'silent-direct', url: db.url, directUrl: db.url, startupTimeoutMs: BUDGET_MS };
      const lock = LockModule.forRoot(options);
      const outcome = await start(lock);
      try {
        expect(outcome.failure).toBeUndefined();
        expect(outcome.stillStarting).toBe(false);
        expect(outcome.log.matching(/^Start-up waits for the database: /)).toEqual([]);
        const stamp = await outcome.locks!.tryLocks(['DIRECT_WRITE']);
        expect(stamp).toBeGreaterThan(0);
        await outcome.locks!.releaseLocks(stamp);
      } finally {
        await outcome.close();
      }
      expect(silent.accepted).toBe(0);
      await until(async () => (await libraryConnections()) === 0, 3000);
    }, 30_000);
  });
});

/**
 * After start-up, a connection attempt that hangs (the server, or the network to it, stops answering new
 * connections) stays bounded by `queryTimeoutMs` on the library's own DataSource too: the start-up bound of its
 * connections does not stay with the pool, and the checkouts of renewals and acquisitions keep theirs.
 */
describe('after start-up on url, a server that stops answering new connections', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a hung connection attempt fails within queryTimeoutMs, the grant is lost, close() leaves no socket', async () => {
    const proxy = await startResetProxy(db.url);
    const queryTimeoutMs = 1000;
    const leaseMs = 3000;
    try {
      const url = proxy.via(db.url);
      const options = { appId: 'hung-later', url, queryTimeoutMs, leaseMs, renewIntervalMs: 200, reaperIntervalMs: 0 };
      const moduleRef = await Test.createTestingModule({
        imports: [ScheduleModule.forRoot(), LockModule.forRoot(options)],
      }).compile();
      moduleRef.useLogger(false);
      const app = await moduleRef.init();
      const locks = app.get(LockService);
      let closed = false;
      try {
        const stamp = await locks.tryLocks(['HUNG_WRITE']);
        expect(stamp).toBeGreaterThan(0);
        const signal = locks.getSignal(stamp);
        void proxy.freeze(); // new connections are accepted and never answered, until the proxy closes
        proxy.resetAll(); // every open one is gone: each statement needs a new connection
        const began = performance.now();
        const failed = await locks.tryLocks(['OTHER_WRITE']).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(failed).toBeInstanceOf(LockStoreError);
        // The app id taken again (a checkout within queryTimeoutMs, a few tries), never a wait without end.
        expect(performance.now() - began).toBeLessThan(leaseMs + 4 * queryTimeoutMs);
        await until(() => signal.aborted, leaseMs + 2000);
        const closing = performance.now();
        await app.close();
        closed = true;
        expect(performance.now() - closing).toBeLessThan(1000 + 4 * queryTimeoutMs + 4000); // docs/faults.md's bound
        const proxyPort = Number(new URL(url).port);
        await until(() => socketsTo(proxyPort).length === 0, 3000);
      } finally {
        if (!closed) await app.close().catch(() => undefined);
      }
    } finally {
      await proxy.close();
    }
  }, 60_000);
});
