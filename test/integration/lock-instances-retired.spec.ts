import { Test } from '@nestjs/testing';
import { InMemoryLockDatabase, LockAdminService, LockConfigurationError, LockService, LockTestingModule } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { DIALECTS } from '../support/dialects.js';
import { startHolder } from '../support/holder-process.js';
import { createLockApp, type LockApp, type TestLockOptions } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Pod names of earlier deploys: more than one reaper run retires (100 a run). */
const GONE = Array.from({ length: 150 }, (_, i) => `web-5d8f7-${String(i).padStart(4, '0')}`);

for (const dialect of DIALECTS) dialect.describe(`instance rows of app ids long gone, on ${dialect.name}`, () => {
  let db: TestDatabase;
  let live: LockApp | undefined;
  const mysql = dialect.name === 'MariaDB';
  const hourAgo = mysql ? 'UTC_TIMESTAMP(6) - INTERVAL 1 HOUR' : "now() - interval '1 hour'";
  const instances = async (): Promise<string[]> =>
    (await db.query<{ app_id: string }>('SELECT app_id FROM locking_instances ORDER BY app_id')).map((row) => row.app_id);

  beforeAll(async () => {
    db = await dialect.createDatabase();
  });
  afterAll(async () => {
    await live?.close();
    await db?.drop();
  });

  it('retires every row of a gone app id past instanceRetentionMs; keeps a live instance and a dead one that has grants', async () => {
    await db.query(
      `INSERT INTO locking_instances (app_id, instance, process_key, claimed) VALUES ${GONE.map((id) => `('${id}', '${id}:1', NULL, ${hourAgo})`).join(', ')}`,
    );
    // An instance killed (kill -9) while it holds a grant of a long lease: gone, but its grant is still there.
    const holder = startHolder({ DATABASE_URL: db.url, APP_ID: 'web-gone-holding', LOCKS: 'RETIRED_HELD_WRITE', LEASE_MS: '600000' });
    const { stamp } = (await holder.next('held')) as { stamp: number };
    await holder.kill();
    // A live instance, started long ago (its row as old as the others), whose reaper retires the rows.
    live = await createLockApp(db.url, { appId: 'web-live', instanceRetentionMs: 1000, reaperIntervalMs: 200 });
    await db.query(`UPDATE locking_instances SET claimed = ${hourAgo} WHERE app_id IN ('web-live', 'web-gone-holding')`);

    await until(async () => (await instances()).length === 2, 20_000);
    expect(await instances()).toEqual(['web-gone-holding', 'web-live']);
    // Several more reaper runs: the two stay.
    await sleep(1000);
    expect(await instances()).toEqual(['web-gone-holding', 'web-live']);

    // Once its grant is gone (forced here), the dead instance's row goes too; the live one stays.
    await live.app.get(LockAdminService).forceRelease(stamp, 'its pod is gone');
    await until(async () => (await instances()).length === 1, 20_000);
    expect(await instances()).toEqual(['web-live']);
  }, 60_000);

  it('keeps rows younger than instanceRetentionMs, and every row with 0', async () => {
    await live?.close();
    live = undefined;
    await db.query(`INSERT INTO locking_instances (app_id, instance, process_key, claimed) VALUES ('web-old', 'web-old:1', NULL, ${hourAgo})`);
    const keeper = await createLockApp(db.url, { appId: 'web-keeper', instanceRetentionMs: 0, reaperIntervalMs: 100 });
    await sleep(800);
    await keeper.close();
    expect(await instances()).toEqual(['web-keeper', 'web-live', 'web-old']);
    const patient = await createLockApp(db.url, { appId: 'web-patient', instanceRetentionMs: 2 * 3_600_000, reaperIntervalMs: 100 });
    await sleep(800);
    await patient.close();
    expect(await instances()).toEqual(['web-keeper', 'web-live', 'web-old', 'web-patient']);
  }, 60_000);
});

describe('instance rows of app ids long gone, on the in-memory store', () => {
  it('retires the rows of gone app ids past instanceRetentionMs; keeps a live instance and a dead one that has grants', async () => {
    const database = new InMemoryLockDatabase();
    const start = async (options: TestLockOptions): Promise<LockApp> => {
      const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ ...options, database })] }).compile();
      moduleRef.useLogger(false);
      const app = await moduleRef.init();
      return { app, locks: app.get(LockService), close: () => app.close() };
    };
    const hourAgo = Date.now() - 3_600_000;
    for (const appId of GONE) database.instances.set(appId, { instance: `${appId}:1`, processKey: null, claimed: hourAgo });
    // A dead instance (nobody holds its app id) whose grant is still there.
    database.instances.set('mem-gone-holding', { instance: 'mem-gone-holding:1', processKey: null, claimed: hourAgo });
    database.locks.push({ name: 'MEM_HELD', mode: 'W', appId: 'mem-gone-holding', stamp: 999_999 });
    const live = await start({ appId: 'mem-live', instanceRetentionMs: 1000, reaperIntervalMs: 100 });
    try {
      database.instances.get('mem-live')!.claimed = hourAgo;
      const rows = () => [...database.instances.keys()].sort();
      await until(async () => database.instances.size === 2, 20_000);
      expect(rows()).toEqual(['mem-gone-holding', 'mem-live']);
      await sleep(500);
      expect(rows()).toEqual(['mem-gone-holding', 'mem-live']);
      database.locks.splice(database.locks.findIndex((lock) => lock.stamp === 999_999), 1);
      await until(async () => database.instances.size === 1, 20_000);
      expect(rows()).toEqual(['mem-live']);
    } finally {
      await live.close();
    }
  }, 60_000);
});

describe('instanceRetentionMs', () => {
  it.each([-1, 1.5, '7d'])('refuses %j at start-up, naming the option', async (value) => {
    const options = { appId: 'x', instanceRetentionMs: value, database: new InMemoryLockDatabase() } as never;
    const starting = Test.createTestingModule({ imports: [LockTestingModule.forRoot(options)] })
      .compile()
      .then((moduleRef) => moduleRef.init());
    const error = await starting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(/instanceRetentionMs/);
  });
});
