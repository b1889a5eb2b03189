import { execFile } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { makeReachableByPostgresUser } from '../../sample-app/src/database/postgres-user-access.js';
import { freePort } from '../../sample-app/src/database/embedded-postgres.js';
import { startResetProxy } from './reset-proxy.js';
import { connectClient } from './test-database.js';

const run = promisify(execFile);

/** The `bin` folder of the newest PostgreSQL server installed from Debian's packages that has `pg_basebackup`. */
export function debianPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_basebackup')) && existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/**
 * A primary and its synchronous standby (two local clusters of Debian's PostgreSQL, `pg_basebackup -R`), which the
 * clients reach through a TCP proxy, as through a virtual IP or HAProxy. `failover()` does what an operator or
 * Patroni does: kill the primary, promote the standby, point the proxy at it.
 */
export interface StandbyCluster {
  /** The lock database's URL, through the proxy. */
  readonly url: string;
  /** Kills the primary (`pg_ctl stop -m immediate`, no shutdown checkpoint): the clients' connections drop. */
  killPrimary(): Promise<void>;
  /** Promotes the standby (waits until it accepts writes) and points the proxy at it. */
  promoteStandby(): Promise<void>;
  /**
   * Points the proxy at the standby while the primary still runs (a demoted primary's address, HAProxy routing to a
   * read-only node during a failover): every connection through the proxy is reset, new ones reach the standby.
   */
  routeToStandby(): void;
  /** Points the proxy back at the primary (resetting every connection through it). */
  routeToPrimary(): void;
  /** The rows of `text` on the server behind the proxy, or undefined while it does not answer. */
  tryQuery<R>(text: string): Promise<R[] | undefined>;
  /** Stops both servers and the proxy, and deletes their data. */
  destroy(): Promise<void>;
}

/** Runs a PostgreSQL binary as the `postgres` user when this process is root (the server refuses root). */
async function pgBinary(bin: string, name: string, args: readonly string[]): Promise<string> {
  const file = join(bin, name);
  const asRoot = process.getuid?.() === 0;
  const { stdout } = asRoot
    ? await run('runuser', ['-u', 'postgres', '--', file, ...args], { timeout: 60_000 })
    : await run(file, [...args], { timeout: 60_000 });
  return stdout;
}

/** Settings of both servers: fast enough for a test, durable as in production (fsync and synchronous commits on). */
function serverSettings(port: number): string {
  return [
    `port = ${port}`,
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = ''`,
    `max_connections = 200`,
    `wal_level = replica`,
    `max_wal_senders = 5`,
    `hot_standby = on`,
    `synchronous_standby_names = 'standby1'`,
    `shared_buffers = 32MB`,
    '',
  ].join('\n');
}

/** Starts a primary with a synchronous standby and a proxy in front of the primary, the lock tables migrated. */
export async function startStandbyCluster(bin: string): Promise<StandbyCluster> {
  const parent = mkdtempSync(join(tmpdir(), 'ndl-standby-'));
  makeReachableByPostgresUser(parent);
  // The servers run as `postgres` (they refuse root): their folders are its own.
  if (process.getuid?.() === 0) {
    const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout);
    chownSync(parent, await id('-u'), await id('-g'));
  }
  const primary = join(parent, 'primary');
  const standby = join(parent, 'standby');
  const primaryPort = await freePort();
  const standbyPort = await freePort();
  const pgCtl = (dir: string, ...args: string[]) => pgBinary(bin, 'pg_ctl', ['-D', dir, '-l', `${dir}.log`, ...args]);

  await pgBinary(bin, 'initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  appendFileSync(primary + '/postgresql.conf', serverSettings(primaryPort));
  appendFileSync(primary + '/pg_hba.conf', 'host replication all 127.0.0.1/32 trust\n');
  await pgCtl(primary, '-w', 'start');
  await pgBinary(bin, 'pg_basebackup', [
    '-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standby, '-R', '-X', 'stream', '--no-sync',
  ]);
  appendFileSync(
    standby + '/postgresql.auto.conf',
    `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=standby1'\n`,
  );
  // Once promoted it has no standby of its own: as Patroni does, it then commits without waiting for one.
  appendFileSync(standby + '/postgresql.conf', `port = ${standbyPort}\nsynchronous_standby_names = ''\n`);
  await pgCtl(standby, '-w', 'start');

  const direct = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;
  // Every commit on the primary now waits for the standby: wait until it is the synchronous one.
  for (let i = 0; ; i++) {
    const client = await connectClient(direct(primaryPort));
    const rows = (await client.query(`SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'`)).rows;
    await client.end();
    if (rows.length > 0) break;
    if (i > 100) throw new Error('the standby never became synchronous');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const proxy = await startResetProxy(direct(primaryPort));
  const url = proxy.via(direct(primaryPort));
  const dataSource = new DataSource({ type: 'postgres', url, migrations: [...LOCK_MIGRATIONS] });
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();

  const stopQuietly = (dir: string) => pgCtl(dir, 'stop', '-m', 'immediate').catch(() => undefined);
  return {
    url,
    async killPrimary() {
      await pgCtl(primary, 'stop', '-m', 'immediate');
    },
    async promoteStandby() {
      await pgCtl(standby, '-w', 'promote');
      proxy.switchTo(direct(standbyPort));
    },
    routeToStandby() {
      proxy.switchTo(direct(standbyPort));
    },
    routeToPrimary() {
      proxy.switchTo(direct(primaryPort));
    },
    async tryQuery<R>(text: string) {
      try {
        const client = await connectClient(url);
        try {
          return (await client.query(text)).rows as R[];
        } finally {
          await client.end();
        }
      } catch {
        return undefined;
      }
    },
    async destroy() {
      await proxy.close();
      await stopQuietly(primary);
      await stopQuietly(standby);
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
