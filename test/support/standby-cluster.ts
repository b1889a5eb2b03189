import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { rowsOrUndefined } from './invariant-checker.js';
import { until } from './until.js';

/** Debian's PostgreSQL 15 server binaries (package postgresql-15). */
const BIN = '/usr/lib/postgresql/15/bin';

/** Whether the PostgreSQL 15 binaries are installed (CI installs them: see `.ci/run`, `REQUIRE_PG_STANDBY`). */
export function standbyBinariesInstalled(): boolean {
  return existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_basebackup'));
}

/**
 * A loopback TCP proxy that forwards every client to one server port and can be switched to another: the switch
 * closes every client socket (as HAProxy's `on-marked-down shutdown-sessions` does), so clients reconnect to the new
 * server.
 */
export interface SwitchProxy {
  readonly port: number;
  /** Points new connections at `port` and closes every connection through the proxy. */
  switchTo(port: number): void;
  close(): Promise<void>;
}

export async function startSwitchProxy(targetPort: number): Promise<SwitchProxy> {
  let target = targetPort;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnectionTo(target);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    switchTo(port) {
      target = port;
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function createConnectionTo(port: number): Socket {
  return connect(port, '127.0.0.1');
}

/** A primary and a synchronous standby, two local PostgreSQL 15 clusters, and a proxy in front of the primary. */
export interface StandbyCluster {
  /** The lock tables' database through the proxy. */
  readonly url: string;
  readonly primaryPort: number;
  readonly standbyPort: number;
  /**
   * What `pg_ctl stop -m immediate` does to the primary, sent from here (SIGQUIT to the postmaster, which ends every
   * server process without a checkpoint) so that nothing runs in between: it dies as in a crash, clients' connections
   * break. Resolves once the postmaster is gone.
   */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote -w` on the standby: resolves once it accepts writes. */
  promoteStandby(): void;
  /** Points the proxy at the standby and closes every client connection. */
  switchProxy(): void;
  /** The rows of `text` through the proxy, undefined while nothing answers. */
  tryQuery<R extends Record<string, unknown>>(text: string): Promise<R[] | undefined>;
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Runs a PostgreSQL binary, as the `postgres` user when this process is root (initdb refuses root). */
function pg(binary: string, args: readonly string[]): string {
  const root = process.getuid?.() === 0;
  const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(BIN, binary), ...args]] : [join(BIN, binary), [...args]];
  return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
}

const COMMON_SETTINGS = [
  `listen_addresses = '127.0.0.1'`,
  `max_connections = 120`,
  `fsync = off`, // the tests kill the server process, never the machine: the OS keeps what was written
  `full_page_writes = off`,
  `shared_buffers = 32MB`,
  `wal_level = replica`,
  `max_wal_senders = 4`,
  `wal_sender_timeout = 5s`,
  `wal_receiver_status_interval = 1s`,
  `wal_retrieve_retry_interval = 200ms`,
  `logging_collector = off`,
];

/**
 * Starts a primary (`synchronous_standby_names = '*'`: a commit waits for the standby's flush) and a standby made
 * with `pg_basebackup -R`, waits until the standby is synchronous, and migrates the lock tables through the proxy.
 */
export async function startStandbyCluster(): Promise<StandbyCluster> {
  const parent = mkdtempSync(join(tmpdir(), 'ndl-standby-'));
  chmodSync(parent, 0o755);
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(parent, uid, gid);
  }
  const primary = join(parent, 'primary');
  const standby = join(parent, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  pg('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  appendFileSync(
    join(primary, 'postgresql.conf'),
    [...COMMON_SETTINGS, `port = ${primaryPort}`, `unix_socket_directories = '${parent}'`, `synchronous_standby_names = '*'`, ''].join('\n'),
  );
  pg('pg_ctl', ['-D', primary, '-l', join(parent, 'primary.log'), '-w', 'start']);
  pg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standby, '-R', '-X', 'stream', '--no-sync']);
  // The standby runs alone once promoted: it must not wait for a standby of its own.
  appendFileSync(join(standby, 'postgresql.conf'), [`port = ${standbyPort}`, `synchronous_standby_names = ''`, ''].join('\n'));
  pg('pg_ctl', ['-D', standby, '-l', join(parent, 'standby.log'), '-w', 'start']);
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  await until(async () => {
    const rows = await rowsOrUndefined<{ sync_state: string }>(primaryUrl, 'SELECT sync_state FROM pg_stat_replication');
    return rows?.[0]?.sync_state === 'sync';
  }, 30_000);
  const proxy = await startSwitchProxy(primaryPort);
  const url = `postgres://postgres@127.0.0.1:${proxy.port}/postgres`;
  const dataSource = new DataSource({ type: 'postgres', url, migrations: [...LOCK_MIGRATIONS] });
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();
  let primaryDown = false;
  return {
    url,
    primaryPort,
    standbyPort,
    async killPrimary() {
      const pid = Number(readFileSync(join(primary, 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGQUIT');
      primaryDown = true;
      await until(() => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      }, 10_000);
    },
    promoteStandby() {
      pg('pg_ctl', ['-D', standby, '-w', 'promote']);
    },
    switchProxy() {
      proxy.switchTo(standbyPort);
    },
    tryQuery: <R extends Record<string, unknown>>(text: string) => rowsOrUndefined<R>(url, text),
    async destroy() {
      await proxy.close();
      for (const [dir, down] of [[primary, primaryDown], [standby, false]] as const) {
        if (!down) {
          try {
            pg('pg_ctl', ['-D', dir, '-m', 'immediate', 'stop']);
          } catch {
            // already stopped
          }
        }
      }
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
