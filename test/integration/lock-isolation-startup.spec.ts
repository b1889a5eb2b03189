import { Module, type INestApplicationContext } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LockConfigurationError, LockModule, LockService } from 'nestjs-db-locks';
import { LockHealthIndicator } from 'nestjs-db-locks/terminus';
import { lockAppImports, type TestLockOptions } from '../support/lock-app.js';
import { canStartMariadb, startRestartableMariadb, type RestartableServer } from '../support/restartable-server.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/**
 * A lock DataSource whose sessions do not run READ COMMITTED by default: PostgreSQL's grants refuse every other level
 * (LK001), so the application must not start, nor report itself healthy, on such sessions. MariaDB sets READ
 * COMMITTED on each of its lock transactions itself, so a SERIALIZABLE default is fine there.
 */

/** Boots `imports` (with TerminusModule and the indicator), as an application's `app.init()` does. */
async function boot(imports: unknown[]): Promise<INestApplicationContext> {
  @Module({ imports: [...(imports as never[]), TerminusModule.forRoot({ logger: false })], providers: [LockHealthIndicator] })
  class IsolationAppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [IsolationAppModule] }).compile();
  moduleRef.useLogger(false);
  return moduleRef.init();
}

/** Boots the lock application of `options` on `url`, as the suite's other test applications are wired. */
function bootLockApp(url: string, options: TestLockOptions): Promise<INestApplicationContext> {
  return boot(lockAppImports(url, options));
}

/** What the terminus indicator answers for the key `locks`. */
async function indicatorOf(app: INestApplicationContext): Promise<{ status: string; problems: string[] }> {
  const result = await app.get(LockHealthIndicator).isHealthy('locks');
  return result.locks as unknown as { status: string; problems: string[] };
}

/** The rejection of `promise` (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    async (app) => {
      await (app as INestApplicationContext).close();
      return undefined;
    },
    (error: unknown) => error as Error,
  );
  if (outcome === undefined) throw new Error('expected the application not to start');
  return outcome;
}

describe('PostgreSQL: a lock DataSource that does not run READ COMMITTED by default', () => {
  let db: TestDatabase;
  let name: string;
  const apps: INestApplicationContext[] = [];

  beforeEach(async () => {
    db = await createTestDatabase();
    name = new URL(db.url).pathname.slice(1);
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await db.drop();
  });

  /** Ends every session of the test database but its own and those whose application_name is like `keep`. */
  async function endSessions(keep?: string): Promise<void> {
    await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND ($1::text IS NULL OR application_name NOT LIKE $1)`,
      [keep ?? null],
    );
  }

  it('fails app.init() with a LockConfigurationError naming the connection option, holding nothing', async () => {
    const error = await rejectionOf(
      boot([
        TypeOrmModule.forRoot({
          type: 'postgres',
          url: db.url,
          extra: { options: '-c default_transaction_isolation=serializable' },
        }),
        ScheduleModule.forRoot(),
        LockModule.forRoot({ appId: 'serializable-client' }),
      ]),
    );
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect(error.message).toMatch(/SERIALIZABLE by default \(default_transaction_isolation = 'serializable'\)/);
    expect(error.message).toMatch(/remove default_transaction_isolation from them \(`extra\.options`/);
    const held = await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE 'nestjs-db-locks %'`);
    expect(held).toEqual([{ n: 0 }]);
  });

  it('fails app.init() naming the database setting (ALTER DATABASE … SET) and how to reset it; starts once reset', async () => {
    await db.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'serializable'`);
    const error = await rejectionOf(bootLockApp(db.url, { appId: 'serializable-database' }));
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect(error.message).toContain(`ALTER DATABASE ${name} RESET default_transaction_isolation`);
    await db.query(`ALTER DATABASE ${name} RESET default_transaction_isolation`);
    const app = await bootLockApp(db.url, { appId: 'serializable-database' });
    apps.push(app);
    expect(await app.get(LockService).tryLocks(['RESET_WRITE'])).toBeGreaterThan(0);
    expect(await app.get(LockService).getHealth()).toMatchObject({ healthy: true, problems: [] });
  });

  it('refuses REPEATABLE READ by default too (every grant refuses it alike)', async () => {
    await db.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'repeatable read'`);
    const error = await rejectionOf(bootLockApp(db.url, { appId: 'repeatable-database' }));
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect(error.message).toMatch(/REPEATABLE READ by default/);
  });

  it('reports unhealthy, naming the setting, once connections opened after start-up run SERIALIZABLE', async () => {
    const app = await bootLockApp(db.url, { appId: 'later-pool', renewIntervalMs: 200 });
    apps.push(app);
    const locks = app.get(LockService);
    expect(await locks.getHealth()).toMatchObject({ healthy: true, problems: [] });
    await db.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'serializable'`);
    await endSessions(); // the pool opens new connections, under the new setting
    await until(async () => (await locks.getHealth()).appIdHeld, 10_000);
    const health = await locks.getHealth();
    expect(health.healthy).toBe(false);
    expect(health.problems.join('\n')).toContain(`ALTER DATABASE ${name} RESET default_transaction_isolation`);
    const indicator = await indicatorOf(app);
    expect(indicator.status).toBe('down');
    expect(indicator.problems.join('\n')).toMatch(/every grant needs READ COMMITTED/);
  });

  it('reports the refusals of acquisitions as a problem, though the probe\'s own connections run READ COMMITTED', async () => {
    const appId = 'later-session';
    const app = await bootLockApp(db.url, { appId, renewIntervalMs: 200 });
    apps.push(app);
    const locks = app.get(LockService);
    // The instance session is opened again under a SERIALIZABLE default (the setting was changed, then the session
    // broke), and the setting is changed back: the pool's new connections are fine, the kept session is not.
    await db.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'serializable'`);
    await endSessions();
    await until(async () => (await locks.getHealth()).appIdHeld, 10_000);
    await db.query(`ALTER DATABASE ${name} RESET default_transaction_isolation`);
    await endSessions(`nestjs-db-locks ${appId} %`);
    // Acquisitions go on the instance session's connection while it is idle: one of them meets the refusal.
    let refusal: unknown;
    for (let attempt = 0; attempt < 50 && refusal === undefined; attempt++) {
      await locks.tryLocks([`LATER_${attempt}_WRITE`]).then(
        (stamp) => (stamp > 0 ? locks.releaseLocks(stamp) : undefined),
        (error: unknown) => (refusal = error),
      );
    }
    expect(refusal).toBeInstanceOf(LockConfigurationError);
    // Acquisitions sent together also go on the pool's connections, which grant: a grant between refusals does not
    // make the instance healthy while its kept session still refuses.
    let granted = 0;
    for (let round = 0; round < 50 && granted === 0; round++) {
      const outcomes = await Promise.allSettled([0, 1, 2, 3].map((i) => locks.tryLocks([`AFTER_${round}_${i}_WRITE`])));
      for (const outcome of outcomes) {
        if (outcome.status === 'fulfilled' && outcome.value > 0) {
          granted++;
          await locks.releaseLocks(outcome.value);
        }
      }
    }
    expect(granted).toBeGreaterThan(0);
    const health = await locks.getHealth();
    expect(health).toMatchObject({ healthy: false, appIdHeld: true, database: 'reachable' });
    expect(health.problems.join('\n')).toMatch(/Acquisitions are refused \(the last \d+ ms ago\): .*READ COMMITTED/);
    expect((await indicatorOf(app)).status).toBe('down');
  });
});

(canStartMariadb() ? describe : describe.skip)('MariaDB: a server whose default is SERIALIZABLE', () => {
  let server: RestartableServer;
  beforeAll(async () => {
    server = await startRestartableMariadb(['--transaction-isolation=SERIALIZABLE']);
  }, 120_000);
  afterAll(() => server?.destroy());

  it('starts, grants (each lock transaction sets READ COMMITTED itself) and reports healthy', async () => {
    expect(await server.tryQuery('SELECT @@tx_isolation AS level')).toEqual([{ level: 'SERIALIZABLE' }]);
    const app = await bootLockApp(server.url, { appId: 'mariadb-serializable' });
    try {
      const locks = app.get(LockService);
      const stamp = await locks.tryLocks(['M_WRITE', 'N_READ']);
      expect(stamp).toBeGreaterThan(0);
      expect(await locks.tryLocks(['M_READ'])).toBe(0);
      await locks.releaseLocks(stamp);
      expect(await locks.getHealth()).toMatchObject({ healthy: true, problems: [] });
      expect((await indicatorOf(app)).status).toBe('up');
    } finally {
      await app.close();
    }
  });
});
