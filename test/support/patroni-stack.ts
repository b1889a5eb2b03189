import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { LOCK_MIGRATIONS } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { makeReachableByPostgresUser } from '../../sample-app/src/database/postgres-user-access.js';
import { freePort } from '../../sample-app/src/database/embedded-postgres.js';
import { debianPostgresBin } from './standby-cluster.js';
import { rowsOrUndefined } from './invariant-checker.js';

const run = promisify(execFile);

/** Whether this machine has Patroni, etcd and HAProxy from Debian's packages, and a PostgreSQL server for them. */
export function patroniInstalled(): boolean {
  return ['/usr/bin/patroni', '/usr/bin/etcd', '/usr/sbin/haproxy'].every((file) => existsSync(file)) && debianPostgresBin() !== undefined;
}

/** One Patroni node: its names, ports and folder. */
interface PatroniNode {
  readonly name: string;
  readonly pgPort: number;
  readonly restPort: number;
  readonly dir: string;
  process?: ChildProcess;
}

/**
 * A Patroni cluster as it runs in production, from Debian's packages: one etcd (3.4), two Patroni nodes (3.0) with
 * `synchronous_mode`, and HAProxy (2.6) in front, sending the clients to the node whose REST API answers 200 on
 * `/primary` (checked every 500 ms; a node marked down has its sessions shut down). Private ports and folders.
 */
export interface PatroniStack {
  /** The lock database's URL through HAProxy (the lock tables migrated). */
  readonly url: string;
  /** The URL of one node's PostgreSQL, not through HAProxy. */
  nodeUrl(name: string): string;
  /** The names of the nodes. */
  readonly nodes: readonly string[];
  /** The node whose REST API answers 200 on `/primary`, or undefined while there is none. */
  leader(): Promise<string | undefined>;
  /** The node that is not `name`. */
  other(name: string): string;
  /**
   * Waits until the cluster is whole again: a leader, the other node its synchronous standby (Patroni's `/sync`
   * answers 200 there), and a write through HAProxy commits. Resolves with how long that took.
   */
  settled(timeoutMs?: number): Promise<number>;
  /** Patroni's switchover, through the leader's REST API, to the synchronous standby. */
  switchover(): Promise<void>;
  /** kill -9 of the leader's postmaster (Patroni stays up and decides what follows). */
  killLeaderPostmaster(): Promise<string>;
  /** Stops etcd (kill -9: its clients' connections are refused); `startEtcd` starts it again on the same data. */
  stopEtcd(): Promise<void>;
  startEtcd(): Promise<void>;
  /** Whether a write through HAProxy commits now (a primary that accepts writes is behind it). */
  writable(): Promise<boolean>;
  /** Whether `name`'s PostgreSQL answers and is in recovery (read-only); undefined while it does not answer. */
  inRecovery(name: string): Promise<boolean | undefined>;
  /** The rows of `text` through HAProxy, or undefined while it does not answer. */
  tryQuery<R>(text: string): Promise<R[] | undefined>;
  /** The rows of `text` on node `name` itself, or undefined while it does not answer. */
  tryQueryOn<R>(name: string, text: string): Promise<R[] | undefined>;
  /** Stops everything and deletes the folders. */
  destroy(): Promise<void>;
}

const yamlOf = (node: PatroniNode, etcdPort: number, bin: string) => `scope: ndl
name: ${node.name}
log:
  level: WARNING
  dir: ${node.dir}
restapi:
  listen: 127.0.0.1:${node.restPort}
  connect_address: 127.0.0.1:${node.restPort}
etcd3:
  hosts: 127.0.0.1:${etcdPort}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 5
        max_replication_slots: 5
        shared_buffers: 32MB
  initdb:
    - encoding: UTF8
    - auth: trust
postgresql:
  listen: 127.0.0.1:${node.pgPort}
  connect_address: 127.0.0.1:${node.pgPort}
  data_dir: ${join(node.dir, 'data')}
  bin_dir: ${bin}
  pgpass: ${join(node.dir, 'pgpass')}
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
  parameters:
    unix_socket_directories: '${node.dir}'
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
`;

const haproxyCfg = (port: number, nodes: readonly PatroniNode[]) => `global
  maxconn 1000
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:${port}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
${nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.pgPort} maxconn 300 check port ${n.restPort}`).join('\n')}
`;

/** Polls `predicate` every 100 ms until it holds; throws `what` after `timeoutMs`. */
async function waitFor(what: string, predicate: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`Patroni stack: ${what} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** Resolves when `child` exited, or after `ms` with false. */
const exitedWithin = (child: ChildProcess, ms: number) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(true)
    : Promise.race([new Promise<boolean>((resolve) => child.once('exit', () => resolve(true))), sleep(ms, false)]);

/** Starts etcd, two Patroni nodes and HAProxy, waits for a leader and a synchronous standby, migrates the lock tables. */
export async function startPatroniStack(): Promise<PatroniStack> {
  const bin = debianPostgresBin();
  if (!bin) throw new Error('no Debian PostgreSQL server in /usr/lib/postgresql/*/bin');
  const parent = mkdtempSync(join(tmpdir(), 'ndl-patroni-'));
  makeReachableByPostgresUser(parent);
  const root = process.getuid?.() === 0;
  const ids = root ? await Promise.all(['-u', '-g'].map(async (flag) => Number((await run('id', [flag, 'postgres'])).stdout))) : [];
  const etcdPort = await freePort();
  const etcdPeerPort = await freePort();
  const haproxyPort = await freePort();
  const nodes: PatroniNode[] = [];
  for (const name of ['pg1', 'pg2']) {
    const dir = join(parent, name);
    mkdirSync(dir, { mode: 0o700 });
    nodes.push({ name, pgPort: await freePort(), restPort: await freePort(), dir });
    writeFileSync(join(dir, 'patroni.yml'), yamlOf(nodes.at(-1)!, etcdPort, bin));
    if (root) chownSync(dir, ids[0]!, ids[1]!);
  }
  const node = (name: string) => nodes.find((n) => n.name === name)!;

  let etcd: ChildProcess | undefined;
  const startEtcd = async () => {
    const url = `http://127.0.0.1:${etcdPort}`;
    etcd = spawn('/usr/bin/etcd', [
      '--name', 'e1', '--data-dir', join(parent, 'etcd'), '--listen-client-urls', url, '--advertise-client-urls', url,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeerPort}`,
      '--initial-cluster', `e1=http://127.0.0.1:${etcdPeerPort}`, '--log-level', 'error',
    ], { stdio: 'ignore' });
    await waitFor('etcd did not answer', async () => (await fetch(`${url}/health`)).ok, 30_000);
  };
  const startNode = (n: PatroniNode) => {
    const args = [join(n.dir, 'patroni.yml')];
    n.process = root
      ? spawn('runuser', ['-u', 'postgres', '--', '/usr/bin/patroni', ...args], { stdio: 'ignore' })
      : spawn('/usr/bin/patroni', args, { stdio: 'ignore' });
  };
  const rest = async (n: PatroniNode, path: string, init?: RequestInit, timeoutMs = 2000) =>
    fetch(`http://127.0.0.1:${n.restPort}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const leader = async () => {
    for (const n of nodes) if (await rest(n, '/primary').then((r) => r.status === 200, () => false)) return n.name;
    return undefined;
  };
  const nodeUrl = (name: string) => `postgres://postgres@127.0.0.1:${node(name).pgPort}/postgres`;
  const url = `postgres://postgres@127.0.0.1:${haproxyPort}/postgres`;
  const tryQuery = <R>(text: string, on = url) => rowsOrUndefined(on, text) as Promise<R[] | undefined>;

  await startEtcd();
  startNode(nodes[0]!);
  await waitFor('no leader', async () => (await leader()) === 'pg1', 60_000);
  startNode(nodes[1]!);
  writeFileSync(join(parent, 'haproxy.cfg'), haproxyCfg(haproxyPort, nodes));
  const haproxy = spawn('/usr/sbin/haproxy', ['-f', join(parent, 'haproxy.cfg'), '-db'], { stdio: 'ignore' });
  const writable = async () => (await tryQuery('SELECT txid_current()')) !== undefined &&
    (await tryQuery<{ r: boolean }>('SELECT pg_is_in_recovery() AS r'))?.[0]?.r === false;
  const settled = async (timeoutMs = 90_000) => {
    const started = Date.now();
    await waitFor('the cluster did not settle (a leader, its synchronous standby, writes through HAProxy)', async () => {
      const first = await leader();
      if (!first) return false;
      const standby = nodes.find((n) => n.name !== first)!;
      return (await rest(standby, '/sync').then((r) => r.status === 200, () => false)) && (await writable());
    }, timeoutMs);
    return Date.now() - started;
  };
  await settled();
  const dataSource = new DataSource({ type: 'postgres', url, migrations: [...LOCK_MIGRATIONS] });
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();

  const postmasterPid = (name: string) => Number(readFileSync(join(node(name).dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url,
    nodeUrl,
    nodes: nodes.map((n) => n.name),
    leader,
    settled,
    other: (name) => nodes.find((n) => n.name !== name)!.name,
    async switchover() {
      const from = await leader();
      if (!from) throw new Error('Patroni stack: no leader to switch over from');
      const to = nodes.find((n) => n.name !== from)!;
      const response = await rest(node(from), '/switchover', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ leader: from, candidate: to.name }),
      }, 60_000); // answered once the switchover is done
      if (!response.ok) throw new Error(`Patroni switchover refused: ${response.status} ${await response.text()}`);
      await waitFor(`${to.name} did not become the leader`, async () => (await leader()) === to.name, 30_000);
    },
    async killLeaderPostmaster() {
      const name = await leader();
      if (!name) throw new Error('Patroni stack: no leader to kill');
      process.kill(postmasterPid(name), 'SIGKILL');
      return name;
    },
    async stopEtcd() {
      etcd?.kill('SIGKILL');
      if (etcd) await exitedWithin(etcd, 10_000);
      etcd = undefined;
    },
    startEtcd,
    writable,
    async inRecovery(name) {
      return (await tryQuery<{ r: boolean }>('SELECT pg_is_in_recovery() AS r', nodeUrl(name)))?.[0]?.r;
    },
    tryQuery: (text) => tryQuery(text),
    tryQueryOn: (name, text) => tryQuery(text, nodeUrl(name)),
    async destroy() {
      haproxy.kill('SIGKILL');
      for (const n of nodes) n.process?.kill('SIGTERM');
      for (const n of nodes) if (n.process && !(await exitedWithin(n.process, 20_000))) n.process.kill('SIGKILL');
      for (const n of nodes) {
        // Patroni's postmaster outlives a killed Patroni: stop it too.
        try {
          process.kill(postmasterPid(n.name), 'SIGKILL');
        } catch {
          // not running
        }
      }
      etcd?.kill('SIGKILL');
      await sleep(300);
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
