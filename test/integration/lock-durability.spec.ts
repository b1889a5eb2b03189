import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaderService, LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { startEmbeddedPostgres } from '../../sample-app/src/database/embedded-postgres.js';
import { LockTasksRegistrar } from '../../lib/tasks/lock-tasks.registrar.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { until } from '../support/until.js';
import { connectClient } from '../support/test-database.js';

/**
 * A grant must survive a server crash even when the application runs its sessions with `synchronous_commit = off`.
 * The crash is real: a backend killed with SIGKILL makes PostgreSQL reset shared memory and replay the WAL from disk,
 * which loses every commit whose WAL was not flushed. The server is this file's own (the crash ends every session).
 */
describe('durability of grants', () => {
  let parent: string;
  let server: { url: string; stop(): Promise<void> };
  let app: LockApp | undefined;

  beforeAll(async () => {
    parent = mkdtempSync(join(tmpdir(), 'ndl-durability-'));
    server = await startEmbeddedPostgres({ dataDir: join(parent, 'pg'), persistent: false });
    const admin = await connectClient(server.url);
    // The WAL writer would otherwise flush an asynchronous commit within 200 ms: give the crash a wide window.
    await admin.query(`ALTER SYSTEM SET wal_writer_delay = '10s'`);
    await admin.query('SELECT pg_reload_conf()');
    await admin.end();
    const dataSource = new DataSource({ type: 'postgres', url: server.url, migrations: [...LOCK_MIGRATIONS] });
    await dataSource.initialize();
    await dataSource.runMigrations();
    await dataSource.destroy();
  });
  afterAll(async () => {
    await app?.close();
    await server.stop();
    rmSync(parent, { recursive: true, force: true });
  });

  it('a grant made on a session with synchronous_commit = off survives a crash of the server', async () => {
    const url = new URL(server.url);
    url.searchParams.set('options', '-c synchronous_commit=off');
    app = await createLockApp(url.toString(), { appId: 'durable', reaperIntervalMs: 0 });
    const stamp = await app.locks.tryLocks(['DURABLE_WRITE']);
    expect(stamp).toBeGreaterThan(0);

    const victim = await connectClient(server.url);
    const [{ pid }] = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
    process.kill(pid, 'SIGKILL'); // the postmaster resets and replays the WAL that reached the disk
    // Read before the application closes: its close releases what it holds once the server is back.
    const rows = await readAfterRecovery<{ stamp: string }>('SELECT stamp FROM locking');
    expect(rows).toEqual([{ stamp: String(stamp) }]);
    await app.close();
    app = undefined;
  });

  it('a lease renewal made on a session with synchronous_commit = off survives a crash of the server', async () => {
    const url = new URL(server.url);
    url.searchParams.set('options', '-c synchronous_commit=off');
    app = await createLockApp(url.toString(), { appId: 'renewing', leaseMs: 600_000, renewIntervalMs: 100, reaperIntervalMs: 0 });
    const stamp = await app.locks.tryLocks(['RENEWED_WRITE']);
    const leaseOf = async () =>
      (await readAfterRecovery<{ lease: string }>(`SELECT lease_expires::text AS lease FROM locking_log WHERE stamp = ${stamp}`))[0]?.lease;
    const granted = await leaseOf();
    await until(async () => (await leaseOf()) !== granted); // a renewal committed
    // No renewal after this point: what the crash keeps is the last one committed before it.
    const tasks = app.app.get(LockTasksRegistrar);
    tasks.onModuleDestroy(); // the tasks leave the registry
    await tasks.stop(); // and the renewal that shutdown keeps going stops
    const renewed = await leaseOf();
    const victim = await connectClient(server.url);
    const [{ pid }] = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
    process.kill(pid, 'SIGKILL');
    expect(await leaseOf()).toBe(renewed);
    await app.close();
    app = undefined;
  });

  it('an election made on a session with synchronous_commit = off survives a crash of the server: the token never goes back', async () => {
    const url = new URL(server.url);
    url.searchParams.set('options', '-c synchronous_commit=off');
    // No renewal and no reaper before the crash: their durable commits would flush the election's WAL with theirs.
    app = await createLockApp(url.toString(), { appId: 'elected', leaseMs: 600_000, renewIntervalMs: 300_000, reaperIntervalMs: 0 });
    const leaders = app.app.get(LeaderService);
    leaders.campaign('durable-role', (signal) => new Promise((resolve) => signal.addEventListener('abort', resolve)));
    await until(() => leaders.isLeader('durable-role'));
    const token = leaders.term('durable-role')!.token;

    const victim = await connectClient(server.url);
    const [{ pid }] = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
    process.kill(pid, 'SIGKILL');
    // The term the leader holds is on disk: the next election of the role gets a larger token.
    const rows = await readAfterRecovery<{ term: string }>(`SELECT term::text AS term FROM locking_leaders WHERE role = 'durable-role'`);
    expect(rows).toEqual([{ term: String(token) }]);
    await app.close();
    app = undefined;
  });

  /** Runs `sql` on a connection of its own once the server accepts connections again (after its crash recovery). */
  async function readAfterRecovery<R extends Record<string, unknown>>(sql: string): Promise<R[]> {
    let rows: R[] = [];
    await until(async () => {
      try {
        const reader = await connectClient(server.url);
        try {
          rows = (await reader.query<R>(sql)).rows;
          return true;
        } finally {
          await reader.end();
        }
      } catch {
        return false; // still in recovery
      }
    }, 30_000);
    return rows;
  }
});
