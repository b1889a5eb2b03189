import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Injectable, Module } from '@nestjs/common';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockConfigurationError, LockModule, LockService, LockStartupTimeoutError, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { lockRows } from '../support/lock-rows.js';
import type { RestartableServer } from '../support/restartable-server.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

let db: TestDatabase;

/** Whether each run of the interval job found its lock row in the table while it ran. */
const ticks: boolean[] = [];
let inFlight = 0;

@Injectable()
class Repayments {
  /** Called through `@WithLocks`: returns whether its lock row was in the table during the call. */
  @WithLocks('LOAN:7_WRITE')
  async repay(): Promise<boolean> {
    return (await lockRows(db)).some((row) => row.lock_name === 'LOAN:7' && row.app_id === 'own-1');
  }

  @Interval('own-connection-sweep', 100)
  @WithLocks('SWEEP_WRITE')
  async sweep(): Promise<void> {
    inFlight++;
    try {
      ticks.push((await lockRows(db)).some((row) => row.lock_name === 'SWEEP' && row.app_id === 'own-1'));
    } finally {
      inFlight--;
    }
  }
}

/** The library's connections to `db` (their application_name starts with `nestjs-db-locks`), from the server's side. */
async function libraryConnections(dialect: string): Promise<number> {
  if (dialect === 'PostgreSQL') {
    const [row] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'nestjs-db-locks %'`,
    );
    return row!.n;
  }
  // MariaDB names no application: every session in the database but the counting one is the library's.
  const [row] = await db.query<{ n: number | string }>(
    'SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()',
  );
  return Number(row!.n);
}

for (const dialect of DIALECTS) {
  dialect.describe(`LockModule.forRoot({ url }) without TypeORM of the application's, on ${dialect.name}`, () => {
    beforeAll(async () => {
      db = await dialect.createDatabase({ migrate: false });
    });
    afterAll(async () => {
      await until(() => inFlight === 0);
      await db.drop();
    });

    it('migrates at start-up, locks, runs @WithLocks and jobs, is healthy, and leaves no connection open at close', async () => {
      @Module({
        imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'own-1', url: db.url, migrationsRun: true })],
        providers: [Repayments],
      })
      class AppModule {}

      expect(await libraryConnections(dialect.name)).toBe(0);
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      moduleRef.useLogger(false);
      const app = await moduleRef.init();
      const locks = app.get(LockService);
      try {
        const stamp = await locks.tryLocks(['LOAN:1_WRITE']);
        expect(stamp).toBeGreaterThan(0);
        expect(await locks.tryLocks(['LOAN:1_READ'])).toBe(0);
        await locks.releaseLocks(stamp);
        expect(await locks.tryLocks(['LOAN:1_READ'])).toBeGreaterThan(0);

        expect(await app.get(Repayments).repay()).toBe(true);
        await until(() => ticks.length >= 2);
        expect(ticks.every(Boolean)).toBe(true);

        const health = await locks.getHealth();
        expect(health).toMatchObject({ healthy: true, appIdHeld: true, database: 'reachable', schema: 'current' });
        expect(await libraryConnections(dialect.name)).toBeGreaterThan(0);
      } finally {
        await app.close();
      }
      // The pool and the kept sessions are closed by the time close() resolves.
      await until(async () => (await libraryConnections(dialect.name)) === 0);
      // The locked calls released their grants before the pool closed; the imperative grant is left to restart.
      expect((await lockRows(db)).filter((row) => row.lock_name !== 'LOAN:1')).toEqual([]);
    });

    it('takes url from a forRootAsync factory with ownConnection: true', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [
          ScheduleModule.forRoot(),
          LockModule.forRootAsync({ ownConnection: true, useFactory: () => ({ appId: 'own-async', url: db.url }) }),
        ],
      }).compile();
      moduleRef.useLogger(false);
      const app = await moduleRef.init();
      try {
        const locks = app.get(LockService);
        const stamp = await locks.tryLocks(['ASYNC_WRITE']);
        expect(stamp).toBeGreaterThan(0);
        expect((await lockRows(db)).some((row) => row.lock_name === 'ASYNC' && row.app_id === 'own-async')).toBe(true);
        await locks.releaseLocks(stamp);
      } finally {
        await app.close();
      }
      await until(async () => (await libraryConnections(dialect.name)) === 0);
    });
  });
}

for (const dialect of DIALECTS) {
  dialect.describeRestartable(`LockModule.forRoot({ url }) while the server is down at start-up, on ${dialect.name}`, () => {
    let server: RestartableServer;
    beforeAll(async () => {
      server = await dialect.startRestartable();
    }, 120_000);
    afterAll(async () => {
      await server?.start();
      await server?.destroy();
    });

    const start = (startupTimeoutMs: number) => {
      @Module({ imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'own-wait', url: server.url, startupTimeoutMs })] })
      class AppModule {}
      return Test.createTestingModule({ imports: [AppModule] })
        .compile()
        .then((moduleRef) => {
          moduleRef.useLogger(false);
          return moduleRef.init();
        });
    };

    it('gives up with LockStartupTimeoutError once startupTimeoutMs has passed', async () => {
      await server.stop();
      try {
        await expect(start(300)).rejects.toBeInstanceOf(LockStartupTimeoutError);
      } finally {
        await server.start();
      }
    }, 60_000);

    it('waits for the server within startupTimeoutMs, then starts', async () => {
      await server.stop();
      let started = false;
      const app = start(60_000).then((context) => {
        started = true;
        return context;
      });
      // Whatever the machine's load, nothing can start while the server is down.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(started).toBe(false);
      await server.start();
      const context = await app;
      try {
        const locks = context.get(LockService);
        const stamp = await locks.tryLocks(['WAITED_WRITE']);
        expect(stamp).toBeGreaterThan(0);
        await locks.releaseLocks(stamp);
      } finally {
        await context.close();
      }
    }, 60_000);
  });
}

describe('LockModule.forRoot({ url }) configuration errors', () => {
  it('refuses a scheme the library does not know, naming the option', () => {
    expect(() => LockModule.forRoot({ appId: 'a', url: 'mongodb://localhost/app' })).toThrow(LockConfigurationError);
    expect(() => LockModule.forRoot({ appId: 'a', url: 'mongodb://u:secret@localhost/app' })).toThrow(/option url.*u:\*\*\*@/);
  });

  it('refuses url beside the application\'s DataSource, and a dialect that the scheme contradicts', () => {
    expect(() => LockModule.forRoot({ appId: 'a', url: 'postgres://localhost/app', dataSource: 'locks' })).toThrow(
      /options url \(or ownConnection\) and dataSource exclude each other/,
    );
    expect(() => LockModule.forRoot({ appId: 'a', url: 'mariadb://localhost/app', dialect: 'postgres' })).toThrow(
      /dialect is 'postgres' but url reaches MySQL\/MariaDB/,
    );
  });

  it('refuses ownConnection beside dataSource, and a forRootAsync factory that gives no url', async () => {
    expect(() =>
      LockModule.forRootAsync({ ownConnection: true, dataSource: 'locks', useFactory: () => ({ appId: 'a' }) }),
    ).toThrow(/url \(or ownConnection\) and dataSource exclude each other/);
    const moduleRef = Test.createTestingModule({
      imports: [ScheduleModule.forRoot(), LockModule.forRootAsync({ ownConnection: true, useFactory: () => ({ appId: 'a' }) })],
    });
    await expect(moduleRef.compile()).rejects.toThrow(/its factory must return url/);
  });

  it('says which driver to install when the URL\'s is missing (dist/, mysql2 hidden)', async () => {
    const child = fileURLToPath(new URL('./no-driver.child.mjs', import.meta.url));
    const preload = fileURLToPath(new URL('../support/without-mysql2.cjs', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [child], {
      env: { ...process.env, NODE_OPTIONS: `--require ${preload}` },
    });
    expect(stdout.trim()).toBe(
      'LockConfigurationError: LockModule option url reaches MySQL/MariaDB, whose driver is not installed: run `npm install mysql2`',
    );
  });

  it('refuses migrationsRun without url', () => {
    expect(() => LockModule.forRoot({ appId: 'a', migrationsRun: true })).toThrow(
      /migrationsRun runs the lock migrations on the connection the library opens with url/,
    );
  });
});
