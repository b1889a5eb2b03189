import { type INestApplicationContext, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  LockAdminService,
  LockConfigurationError,
  LockFence,
  LockLostError,
  LockModule,
  type LockModuleOptions,
  LockService,
} from 'nestjs-db-locks';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import pg from 'pg';
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../support/pgbouncer-server.mjs';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Longer than any test here: a waiter handed its grant sooner was woken by the release's notification. */
const RECHECK_MS = 60_000;

/** An application with no TypeORM of its own: `LockModule.forRoot({ appId, url, … })`. */
async function startOwn(options: Pick<LockModuleOptions, 'appId' | 'url' | 'directUrl' | 'pooler'>): Promise<INestApplicationContext> {
  @Module({ imports: [ScheduleModule.forRoot(), LockModule.forRoot({ waitRecheckMs: RECHECK_MS, ...options })] })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  moduleRef.useLogger(false);
  try {
    return await moduleRef.init();
  } catch (error) {
    await moduleRef.close().catch(() => undefined);
    throw error;
  }
}

/**
 * The local TCP ports of this process's sockets (Linux /proc): a backend whose client port is one of them is connected
 * to PostgreSQL by this process itself, not by PgBouncer (whose server connections come from its own process).
 */
function ownTcpPorts(): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length > 9 && inodes.has(fields[9]!)) ports.add(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

const run = pgbouncerInstalled() ? describe : describe.skip;

run("LockModule.forRoot({ url }) through PgBouncer in transaction mode, the kept sessions on directUrl", () => {
  let bouncer: PgBouncer;
  let db: TestDatabase;
  const apps: INestApplicationContext[] = [];

  beforeAll(async () => {
    bouncer = await startPgBouncer('transaction', 4);
    db = await createTestDatabase();
    await db.query('CREATE TABLE repayments (loan int NOT NULL, stamp bigint NOT NULL)');
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });
  afterAll(async () => {
    await bouncer?.stop();
    await db?.drop();
  });

  /** The server backends whose last statement was a `LISTEN`, their name and client port. */
  const listeners = () =>
    db.query<{ application_name: string; client_port: number }>(
      `SELECT application_name, client_port FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'`,
    );

  for (const pooler of ['detect', 'transaction'] as const) {
    it(`pooler '${pooler}': grants, a wait woken through LISTEN on directUrl, a pg transaction through the pooler fenced`, async () => {
      const url = bouncer.through(db.url);
      const one = await startOwn({ appId: `own-${pooler}-1`, url, directUrl: db.url, pooler });
      apps.push(one);
      const two = await startOwn({ appId: `own-${pooler}-2`, url, directUrl: db.url, pooler });
      apps.push(two);
      const [locks1, locks2] = [one.get(LockService), two.get(LockService)];

      // A grant, then a wait on the other instance woken by its release (long before any re-check).
      const held = await locks1.tryLocks([`LOAN:${pooler}_WRITE`]);
      expect(held).toBeGreaterThan(0);
      expect(await locks2.tryLocks([`LOAN:${pooler}_WRITE`])).toBe(0);
      const started = performance.now();
      const waiting = locks2.tryLocks([`LOAN:${pooler}_WRITE`], { waitMs: RECHECK_MS / 2 });
      await until(async () => (await listeners()).length > 0, 30_000);
      // The waiter's LISTEN runs on a connection of directUrl: opened by this process, not by PgBouncer.
      const [listener, ...others] = await listeners();
      expect(others).toEqual([]);
      expect(listener!.application_name).toMatch(new RegExp(`^nestjs-db-locks own-${pooler}-2 `));
      expect(ownTcpPorts().has(listener!.client_port)).toBe(true);
      await locks1.releaseLocks(held);
      const handedOver = await waiting;
      expect(handedOver).toBeGreaterThan(held);
      expect(performance.now() - started).toBeLessThan(RECHECK_MS / 3);

      // The application's own transaction, on a plain pg client through the pooler, fenced by the grant.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const fence = two.get(LockFence);
        await client.query('BEGIN');
        await client.query('INSERT INTO repayments (loan, stamp) VALUES (1, $1)', [handedOver]);
        await fence.fenceAndCommit(client, handedOver);
        await locks2.releaseLocks(handedOver);

        // Forced free before the fence: rolled back, LockLostError.
        const forced = await locks2.tryLocks([`LOAN:${pooler}_WRITE`]);
        await client.query('BEGIN');
        await client.query('INSERT INTO repayments (loan, stamp) VALUES (1, $1)', [forced]);
        await one.get(LockAdminService).forceRelease(forced, 'stuck repayment');
        await expect(fence.fenceAndCommit(client, forced)).rejects.toThrow(LockLostError);
      } finally {
        await client.end();
      }
      const rows = await db.query<{ stamp: string }>('SELECT stamp FROM repayments WHERE loan = 1 ORDER BY stamp');
      expect(rows.map((row) => Number(row.stamp))).toEqual([handedOver]);
      await db.query('DELETE FROM repayments');
    });

    it(`pooler '${pooler}' without directUrl: start-up fails with LockConfigurationError naming directUrl`, async () => {
      const start = startOwn({ appId: `own-${pooler}-nodirect`, url: bouncer.through(db.url), pooler }).then((app) => {
        apps.push(app); // started after all: closed after the test
        return app;
      });
      await expect(start).rejects.toThrow(LockConfigurationError);
      await expect(start).rejects.toThrow(/option directUrl/);
    });
  }
});
