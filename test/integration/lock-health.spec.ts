import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { LOCK_MIGRATIONS, LockService, type LockHealth } from 'nestjs-db-locks';
import { LockHealthIndicator } from 'nestjs-db-locks/terminus';
import { DataSource } from 'typeorm';
import { lockAppImports, trackApps, type TestLockOptions } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

@Controller()
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('locks')]);
  }
}

/** What `/health` answered: the HTTP status and the indicator's details. */
interface HealthAnswer {
  readonly status: number;
  readonly locks: Omit<LockHealth, 'healthy'> & { status: 'up' | 'down' };
}

/** An HTTP application with TerminusModule, LockModule and a `/health` endpoint using the indicator. */
class HealthApp {
  private constructor(
    readonly app: INestApplication,
    private readonly url: string,
  ) {}

  static async start(dbUrl: string, options: TestLockOptions): Promise<HealthApp> {
    @Module({
      imports: [...lockAppImports(dbUrl, options), TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController],
      providers: [LockHealthIndicator],
    })
    class HealthAppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [HealthAppModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as { port: number };
    return new HealthApp(app, `http://127.0.0.1:${port}/health`);
  }

  get locks(): LockService {
    return this.app.get(LockService);
  }

  async health(): Promise<HealthAnswer> {
    const response = await fetch(this.url);
    const body = (await response.json()) as { info?: Record<string, unknown>; error?: Record<string, unknown> };
    const locks = (body.info?.locks ?? body.error?.locks) as HealthAnswer['locks'];
    return { status: response.status, locks };
  }

  /** Waits until `/health` says `status` (up or down); returns that answer. */
  async until(status: 'up' | 'down', timeoutMs = 15_000): Promise<HealthAnswer> {
    let last: HealthAnswer | undefined;
    await until(async () => (last = await this.health()).locks.status === status, timeoutMs);
    return last!;
  }

  close(): Promise<void> {
    return this.app.close();
  }
}

describe('health: LockService.getHealth and the terminus indicator', () => {
  let db: TestDatabase;
  const apps = trackApps((options: TestLockOptions, url?: string) =>
    HealthApp.start(url ?? db.url, { reaperIntervalMs: 0, ...options }),
  );
  const start = apps.start;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await apps.closeAll();
    await db.query('DROP TRIGGER IF EXISTS block_updates ON locking_log');
    await db.query('DELETE FROM locking');
  });
  afterAll(() => db.drop());

  it('is up with the details when all is well', async () => {
    const app = await start({ appId: 'healthy' });
    await app.locks.tryLocks(['H_WRITE']);
    const answer = await app.health();
    expect(answer.status).toBe(200);
    expect(answer.locks).toEqual({
      status: 'up',
      appId: 'healthy',
      appIdHeld: true,
      fenced: false,
      database: 'reachable',
      schema: 'current',
      renewalFailingForMs: 0,
      grantsHeld: 1,
      waiters: 0,
      problems: [],
    });
    expect(await app.locks.getHealth()).toMatchObject({ healthy: true, grantsHeld: 1 });
  });

  it('is down while the database refuses connections, and up again after', async () => {
    const app = await start({ appId: 'outage', renewIntervalMs: 200 });
    expect((await app.health()).status).toBe(200);
    await db.refuseConnections(true);
    try {
      const first = await app.health(); // at once: the probe fails fast, it never hangs
      expect(first.status).toBe(503);
      expect(first.locks).toMatchObject({ status: 'down', database: 'unreachable', schema: 'unknown' });
      // The end of the app id's session reaches the instance as an event of its connection: told within moments.
      let down = first;
      await until(async () => !(down = await app.health()).locks.appIdHeld, 2000);
      expect(down.status).toBe(503);
      expect(down.locks).toMatchObject({ status: 'down', database: 'unreachable', schema: 'unknown', appIdHeld: false });
      expect(down.locks.problems.join('\n')).toMatch(/did not answer the health probe/);
      expect(down.locks.problems.join('\n')).toMatch(/does not hold its app id "outage"/);
    } finally {
      await db.refuseConnections(false);
    }
    const up = await app.until('up'); // the renewal task takes the app id back
    expect(up.status).toBe(200);
    expect(up.locks).toMatchObject({ database: 'reachable', appIdHeld: true, problems: [] });
  });

  it('is down for good once a twin took its app id', async () => {
    // Renewals far apart, so that the twin starts before the instance takes its app id back.
    const app = await start({ appId: 'twin', leaseMs: 9000, renewIntervalMs: 3000 });
    await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name LIKE 'nestjs-db-locks twin %'`,
    );
    const twin = await start({ appId: 'twin' });
    await until(async () => (await app.locks.getHealth()).fenced, 10_000); // at its next renewal
    const answer = await app.health();
    expect(answer.status).toBe(503);
    expect(answer.locks).toMatchObject({ status: 'down', fenced: true, appIdHeld: false, database: 'reachable' });
    expect(answer.locks.problems.join('\n')).toMatch(/restart it with an appId of its own/);
    expect((await twin.health()).status).toBe(200);
  });

  it('is down while lease renewals fail for more than half a lease', async () => {
    const app = await start({ appId: 'renewer', leaseMs: 6000, renewIntervalMs: 100 });
    await app.locks.tryLocks(['R_WRITE']);
    // Renewals (UPDATEs of the log) fail; everything else, the health probe included, works.
    await db.query(`CREATE OR REPLACE FUNCTION block_updates() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'updates blocked by the test'; END $$`);
    await db.query('CREATE TRIGGER block_updates BEFORE UPDATE ON locking_log FOR EACH ROW EXECUTE FUNCTION block_updates()');
    const down = await app.until('down');
    expect(down.status).toBe(503);
    expect(down.locks).toMatchObject({ database: 'reachable', schema: 'current', appIdHeld: true });
    expect(down.locks.renewalFailingForMs).toBeGreaterThan(3000);
    expect(down.locks.problems).toEqual([expect.stringMatching(/Lease renewals have failed for \d+ ms, more than half/)]);
    await db.query('DROP TRIGGER block_updates ON locking_log');
    const up = await app.until('up');
    expect(up.locks.renewalFailingForMs).toBe(0);
  });

  it('is down when the lock migrations are not all run, or the tables are missing', async () => {
    const old = await createTestDatabase();
    const dataSource = new DataSource({ type: 'postgres', url: old.url, migrations: [...LOCK_MIGRATIONS] });
    await dataSource.initialize();
    try {
      await dataSource.undoLastMigration(); // at the fourth migration of five
      const app = await start({ appId: 'behind' }, old.url);
      const answer = await app.health();
      expect(answer.status).toBe(503);
      expect(answer.locks).toMatchObject({ status: 'down', schema: 'outdated', database: 'reachable', appIdHeld: true });
      expect(answer.locks.problems).toEqual([expect.stringContaining(LOCK_MIGRATIONS.at(-1)!.name)]);
      await dataSource.runMigrations();
      await app.until('up');
      await old.query('DROP TABLE locking_waiters');
      expect((await app.health()).locks).toMatchObject({ status: 'down', schema: 'missing' });
    } finally {
      await dataSource.destroy();
      await apps.closeAll();
      await old.drop();
    }
  });
});
