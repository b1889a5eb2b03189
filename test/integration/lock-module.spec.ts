import { type INestApplicationContext, Injectable, Module } from '@nestjs/common';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  LockConfigurationError,
  LockModule,
  LockService,
  LockStoreError,
  LockTablesMissingError,
  type LockModuleOptions,
} from 'nestjs-db-locks';
import pg from 'pg';
import { InstanceLock } from '../../lib/services/instance-lock.service.js';
import { LockStore } from '../../lib/store/lock.store.js';
import { createLockApp } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { connectClient, createTestDatabase, type TestDatabase } from '../support/test-database.js';

async function boot(imports: unknown[]) {
  const moduleRef = await Test.createTestingModule({ imports: imports as never[] }).compile();
  moduleRef.useLogger(false);
  return moduleRef.init();
}

describe('LockModule wiring', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('forRootAsync takes its options from an injected provider', async () => {
    @Injectable()
    class LockConfig {
      readonly appId = 'from-config';
    }
    @Module({ providers: [LockConfig], exports: [LockConfig] })
    class ConfigModule {}

    const app = await boot([
      TypeOrmModule.forRoot({ type: 'postgres', url: db.url }),
      ScheduleModule.forRoot(),
      LockModule.forRootAsync({
        imports: [ConfigModule],
        inject: [LockConfig],
        useFactory: (config: LockConfig): LockModuleOptions => ({ appId: config.appId, defaultPermits: { read: 3 } }),
      }),
    ]);
    const locks = app.get(LockService);
    expect(locks.appId).toBe('from-config');
    expect(locks.getLockPermits('X')).toEqual({ read: 3, write: 1 });
    const stamp = await locks.tryLocks(['X_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    await locks.releaseLocks(stamp);
    await app.close();
  });

  it('uses a named DataSource and registers its tasks with SchedulerRegistry', async () => {
    const app = await boot([
      TypeOrmModule.forRoot({ name: 'locks', type: 'postgres', url: db.url }),
      ScheduleModule.forRoot(),
      LockModule.forRoot({ appId: 'named', dataSource: 'locks', permitsRefreshIntervalMs: 1000 }),
    ]);
    const registry = app.get(SchedulerRegistry);
    expect(registry.getIntervals().sort()).toEqual([
      'nestjs-db-locks:named:lease-renewal',
      'nestjs-db-locks:named:permits-refresh',
      'nestjs-db-locks:named:reaper',
    ]);
    const stamp = await app.get(LockService).tryLocks(['N_WRITE']);
    await app.get(LockService).releaseLocks(stamp);
    await app.close();
    expect(registry.getIntervals()).toEqual([]);
  });

  it('refuses bad options at start-up with LockConfigurationError', async () => {
    for (const options of [{}, { appId: '' }, { appId: 'a b' }, { appId: 'x', defaultPermits: { write: 0 } }]) {
      await expect(
        boot([
          TypeOrmModule.forRoot({ type: 'postgres', url: db.url }),
          ScheduleModule.forRoot(),
          LockModule.forRoot(options as LockModuleOptions),
        ]),
      ).rejects.toThrow(LockConfigurationError);
    }
  });

  it('refuses a dialect other than postgres or mysql where the module is configured', () => {
    expect(() => LockModule.forRoot({ appId: 'x', dialect: 'oracle' as never })).toThrow(LockConfigurationError);
  });

  it('says how to fix a missing ScheduleModule', async () => {
    await expect(
      boot([TypeOrmModule.forRoot({ type: 'postgres', url: db.url }), LockModule.forRoot({ appId: 'nosched' })]),
    ).rejects.toThrow(/ScheduleModule\.forRoot\(\)/);
  });

  it('refuses a pool too small for its kept sessions instead of hanging later', async () => {
    await expect(
      boot([
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, extra: { max: 2 } }),
        ScheduleModule.forRoot(),
        LockModule.forRoot({ appId: 'tiny-pool' }),
      ]),
    ).rejects.toThrow(/needs at least 3/);
  });

  it('says to run the migration when the tables are missing', async () => {
    const empty = await createTestDatabase({ migrate: false });
    try {
      await expect(createLockApp(empty.url, { appId: 'early' })).rejects.toThrow(LockTablesMissingError);
    } finally {
      await empty.drop();
    }
  });

  // Sessions that are not READ COMMITTED are refused at start-up: lock-isolation-startup.spec.ts.
});

describe('database failures become typed errors', () => {
  let db: TestDatabase;
  let blocker: pg.Client;
  const apps: INestApplicationContext[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    blocker = await connectClient(db.url);
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await blocker.end();
    await db.drop();
  });

  async function bootWithLockTimeout(
    url: string,
    appId: string,
    lockTimeoutMs: number,
    retry: LockModuleOptions['retry'] = { maxAttempts: 50, initialDelayMs: 20, maxDelayMs: 50 },
  ): Promise<LockService> {
    const app = await boot([
      TypeOrmModule.forRoot({ type: 'postgres', url, extra: { options: `-c lock_timeout=${lockTimeoutMs}` } }),
      ScheduleModule.forRoot(),
      LockModule.forRoot({ appId, retry }),
    ]);
    apps.push(app);
    return app.get(LockService);
  }

  /** Holds the engine's advisory lock on `name` in an open transaction, so acquisitions of it must wait. */
  async function holdName(name: string): Promise<void> {
    await blocker.query('BEGIN');
    await blocker.query('SELECT pg_advisory_xact_lock(1819239275, hashtext($1))', [name]);
  }

  it('retries a lock timeout and then grants', async () => {
    const patient = await bootWithLockTimeout(db.url, 'patient', 50);
    await holdName('T');
    const pending = patient.tryLocks(['T_WRITE']);
    await new Promise((r) => setTimeout(r, 300));
    await blocker.query('COMMIT');
    expect(await pending).toBeGreaterThan(0);
    expect(patient.getStats().retries).toBeGreaterThan(0);
  });

  it('gives LockStoreError, not the driver error, when retries run out', async () => {
    const impatient = await bootWithLockTimeout(db.url, 'impatient', 20, { maxAttempts: 2, initialDelayMs: 1 });
    await holdName('U');
    try {
      const error = await impatient.tryLocks(['U_WRITE']).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockStoreError);
      expect(error).toMatchObject({ code: '55P03', operation: 'tryLocks', outcomeUnknown: false });
    } finally {
      await blocker.query('COMMIT');
    }
  });

  it('gives LockStoreError with outcomeUnknown when the connection is killed mid-acquisition', async () => {
    const app = await createLockApp(db.url, { appId: 'victim' });
    await holdName('V');
    try {
      const pending = app.locks.tryLocks(['V_WRITE']).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 200));
      await blocker.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%locking_try_acquire%'`,
      );
      const error = await pending;
      expect(error).toBeInstanceOf(LockStoreError);
      expect((error as LockStoreError).outcomeUnknown).toBe(true);
    } finally {
      await blocker.query('COMMIT');
      await app.close();
    }
  });

  it('acquires and releases on the instance session while it lives, and on the pool while it is gone', async () => {
    // Renewals far apart: nothing takes the app id back behind the test's back.
    const app = await createLockApp(db.url, { appId: 'lane', leaseMs: 120_000, renewIntervalMs: 60_000 });
    const instanceSession = async () =>
      (
        await db.query<{ pid: number; query: string }>(
          `SELECT pid, query FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE 'nestjs-db-locks lane %'`,
        )
      )[0];
    try {
      // One lock: the scalar twin; a group of two: the batch function. One stamp: the scalar twin.
      const pair = await app.locks.tryLocks(['LANE2_WRITE', 'LANE3_READ']);
      expect((await instanceSession())?.query).toContain('locking_try_acquire(');
      await app.locks.releaseLocks(pair);
      const stamp = await app.locks.tryLocks(['LANE_WRITE']);
      expect((await instanceSession())?.query).toContain('locking_try_acquire_one(');
      await app.locks.releaseLocks(stamp);
      const first = await instanceSession();
      expect(first?.query).toContain('locking_release_one(');

      await db.query('SELECT pg_terminate_backend($1)', [first!.pid]);
      await until(() => !app.app.get(InstanceLock).held); // the process saw its session end (not taken back yet)
      // A statement of the hot path sent while the session is gone (as one sent just as it breaks): the pool serves it.
      const meanwhile = await app.app.get(LockStore).tryAcquire([{ name: 'LANE', mode: 'write' }]);
      expect(meanwhile).toBeGreaterThan(stamp);
      expect(await instanceSession()).toBeUndefined();
      const pooled = await db.query<{ query: string }>(
        `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
            AND application_name NOT LIKE 'nestjs-db-locks %' AND query LIKE '%locking_try_acquire_one(%'`,
      );
      expect(pooled).toHaveLength(1);
      expect(await app.app.get(LockStore).release(meanwhile)).toBe(true);

      const again = await app.locks.tryLocks(['LANE_WRITE']); // takes the app id again first, on a new session
      await app.locks.releaseLocks(again);
      expect((await instanceSession())?.query).toContain('locking_release_one(');
    } finally {
      await app.close();
    }
  });
});

