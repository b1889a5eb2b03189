import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import mysql from 'mysql2/promise';
import { lockEntities, LockModule, LockService, LockStartupTimeoutError, LockStoreError } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { DIALECTS } from '../support/dialects.js';
import { useRestartableServer } from '../support/restartable-server.js';
import { CapturedLog } from '../support/logged-lock-app.js';
import { connectClient } from '../support/test-database.js';

/**
 * The application starts on `url`; `afterConnect` runs once its DataSource has connected and before the lock module
 * starts (the fault is then hit by the lock module's start-up, not by TypeORM's own retries).
 */
async function startApp(url: string, appId: string, extra: Record<string, unknown>, afterConnect: () => Promise<void>) {
  const isMysql = url.startsWith('mysql:');
  const entities = [...lockEntities({ dialect: isMysql ? 'mysql' : 'postgres' })];
  const typeorm: DataSourceOptions = isMysql
    ? { type: 'mariadb', url, extra: { connectionLimit: 6 }, timezone: 'Z', entities }
    : { type: 'postgres', url, extra: { max: 6 }, entities };
  const log = new CapturedLog();
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRootAsync({
        useFactory: () => ({ ...typeorm, retryAttempts: 0 }),
        dataSourceFactory: async (options) => {
          const dataSource = await new DataSource(options!).initialize();
          await afterConnect();
          return dataSource;
        },
      }),
      ScheduleModule.forRoot(),
      LockModule.forRoot({ appId, ...(isMysql ? { dialect: 'mysql' as const } : {}), ...extra }),
    ],
  }).compile();
  moduleRef.useLogger(log);
  const started = performance.now();
  try {
    const app = await moduleRef.init();
    return { app, locks: app.get(LockService), log, startedInMs: performance.now() - started };
  } catch (error) {
    await moduleRef.close().catch(() => undefined);
    throw Object.assign(error as Error, { log, startedInMs: performance.now() - started });
  }
}

const options = { leaseMs: 10_000, renewIntervalMs: 500, reaperIntervalMs: 0, queryTimeoutMs: 1000 };

/** Start-up rides through transient faults within `startupTimeoutMs`, and gives up after it naming the option. */
for (const dialect of DIALECTS) dialect.describeRestartable(`start-up through transient faults on ${dialect.name}`, () => {
  const server = useRestartableServer(dialect.startRestartable);
  const postgres = dialect.name === 'PostgreSQL';


  /** Ends every other session of the lock database, again and again, for `ms`. */
  async function terminateSessionsFor(ms: number): Promise<number> {
    let ended = 0;
    const until = performance.now() + ms;
    if (postgres) {
      const admin = await connectClient(server().url);
      try {
        while (performance.now() < until) {
          const { rowCount } = await admin.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
          );
          ended += rowCount ?? 0;
          await sleep(10);
        }
      } finally {
        await admin.end();
      }
    } else {
      const admin = await mysql.createConnection({ uri: server().url });
      try {
        while (performance.now() < until) {
          const [rows] = await admin.query(
            `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND DB = DATABASE()`,
          );
          for (const { id } of rows as Array<{ id: number }>) {
            await admin.query(`KILL CONNECTION ${Number(id)}`).then(() => ended++, () => undefined);
          }
          await sleep(10);
        }
      } finally {
        await admin.end();
      }
    }
    return ended;
  }

  it('starts while its sessions are ended again and again for a second', async () => {
    let terminating: Promise<number> | undefined;
    const started = await startApp(server().url, 'st1', options, async () => {
      terminating = terminateSessionsFor(1000);
      await sleep(20); // the first terminations land on the server check and the claim
    });
    try {
      expect(await terminating).toBeGreaterThan(0);
      const stamp = await started.locks.tryLocks(['ST_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      await started.locks.releaseLocks(stamp);
      await new Promise((resolve) => setTimeout(resolve, 2 * options.renewIntervalMs));
      expect((await started.locks.getHealth()).healthy).toBe(true);
    } finally {
      await started.app.close();
    }
  }, 60_000);

  it('starts when the database stops during start-up and comes back 2 s later, saying once what it waits for', async () => {
    let restarted: Promise<void> | undefined;
    const started = await startApp(server().url, 'st2', options, async () => {
      await server().stop();
      restarted = sleep(2000).then(() => server().start());
    });
    try {
      await restarted;
      expect(started.startedInMs).toBeGreaterThanOrEqual(2000);
      expect(started.log.matching(/Start-up waits for the database/)).toHaveLength(1);
      expect(started.log.matching(/startupTimeoutMs/).length).toBeGreaterThanOrEqual(1);
      const stamp = await started.locks.tryLocks(['ST_WRITE']);
      expect(stamp).toBeGreaterThan(0);
      await started.locks.releaseLocks(stamp);
      expect((await started.locks.getHealth()).healthy).toBe(true);
    } finally {
      await started.app.close();
    }
  }, 60_000);

  it('fails with LockStartupTimeoutError naming startupTimeoutMs when the database stays down past the budget', async () => {
    const budgetMs = 1500;
    const failed = await startApp(server().url, 'st3', { ...options, startupTimeoutMs: budgetMs }, () => server().stop()).then(
      (started) => started.app.close().then(() => new Error('started')),
      (error: unknown) => error,
    );
    await server().start();
    expect(failed).toBeInstanceOf(LockStartupTimeoutError);
    expect((failed as Error).message).toContain('startupTimeoutMs');
    expect((failed as Error).cause).toBeInstanceOf(LockStoreError);
    expect((failed as LockStartupTimeoutError).timeoutMs).toBe(budgetMs);
    const startedInMs = (failed as { startedInMs: number }).startedInMs;
    expect(startedInMs).toBeGreaterThanOrEqual(budgetMs);
    expect(startedInMs).toBeLessThan(budgetMs + 2 * options.queryTimeoutMs + 1000);
  }, 60_000);
});
