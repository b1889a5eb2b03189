// Plain JavaScript: loaded by the Galera specs' global setup (jest.galera.config.js), outside Jest's module mapper and
// TypeScript transform. A MariaDB Galera cluster of three private `mariadbd` processes on 127.0.0.1, from Debian's
// `mariadb-server`, `galera-4` and `rsync` (the state transfer of a joining node).
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, lchownSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { findProgram, freePort } from './mariadb-server.mjs';

/** Where Debian's galera-4 (and other distributions') put the Galera provider. */
const PROVIDERS = ['/usr/lib/galera/libgalera_smm.so', '/usr/lib/libgalera_smm.so', '/usr/lib64/galera-4/libgalera_smm.so'];

/** How long a node may take to start and be Synced in the cluster (a joiner's state transfer included). */
const START_TIMEOUT_MS = 90_000;

/** The Galera provider library (`GALERA_PROVIDER` or Debian's `galera-4`), or undefined. */
function findProvider() {
  return [process.env.GALERA_PROVIDER ?? '', ...PROVIDERS].find((path) => path && existsSync(path));
}

/**
 * What this machine lacks to start a Galera cluster of the tests (empty: nothing): `mariadbd` and
 * `mariadb-install-db` (mariadb-server), the provider (galera-4), `rsync` and `wsrep_sst_rsync` (the state transfer).
 * @returns {string[]}
 */
export function galeraMissing() {
  const missing = [];
  if (!findProgram('mariadbd') || !findProgram('mariadb-install-db')) missing.push('mariadb-server');
  if (!findProvider()) missing.push('galera-4');
  if (!findProgram('rsync')) missing.push('rsync');
  if (!findProgram('wsrep_sst_rsync')) missing.push('mariadb-server (wsrep_sst_rsync)');
  return missing;
}

/** True when this machine can start the Galera cluster of the tests. */
export function galeraInstalled() {
  return galeraMissing().length === 0;
}

/**
 * `count` distinct free ports.
 * @param {number} count
 */
async function freePorts(count) {
  /** @type {Set<number>} */
  const ports = new Set();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** The user and group the joiner's rsync daemon runs as: `wsrep_sst_rsync` starts it as root, rsync drops to nobody. */
function sstDaemonOwner() {
  const passwd = existsSync('/etc/passwd') ? readFileSync('/etc/passwd', 'utf8') : '';
  const entry = passwd.split('\n').find((line) => line.startsWith('nobody:'))?.split(':');
  return { uid: Number(entry?.[2] ?? 65534), gid: Number(entry?.[3] ?? 65534) };
}

/**
 * `chown -R nobody:nogroup` and `chmod -R a+rwX` of a node's folder (run as root): the joiner's rsync daemon (of
 * `wsrep_sst_rsync`) runs as nobody and must be able to write the data directory, also over the files of an earlier
 * life (a node restarted after kill -9 that needs a full SST: rsync then sets the modes of the directories there, which
 * only their owner may); mariadbd runs as root and reads and writes them all.
 * @param {string} path
 * @param {{ uid: number, gid: number } | undefined} owner
 */
function openToSst(path, owner) {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (owner) lchownSync(path, owner.uid, owner.gid);
  chmodSync(path, stat.mode | (stat.isDirectory() || stat.mode & 0o111 ? 0o777 : 0o666));
  if (stat.isDirectory()) for (const entry of readdirSync(path)) openToSst(join(path, entry), owner);
}

/**
 * The position a node's data directory holds (`uuid:seqno`), when its `grastate.dat` does not say it (seqno -1: the
 * node was killed), as Debian's `galera_recovery` finds it: `mariadbd --wsrep-recover` reads it from InnoDB. With it
 * the node rejoins by IST (only the write sets it missed) instead of a full SST. Undefined when none was found.
 * @param {string} mariadbd
 * @param {string[]} args the node's server options
 * @param {string} folder
 */
function recoveredPosition(mariadbd, args, folder) {
  const grastate = join(folder, 'data', 'grastate.dat');
  if (!existsSync(grastate) || !existsSync(join(folder, 'data', 'mysql'))) return undefined;
  if (!/^seqno:\s+-1\s*$/m.test(readFileSync(grastate, 'utf8'))) return undefined;
  const log = join(folder, 'wsrep-recover.log');
  rmSync(log, { force: true });
  spawnSync(mariadbd, [...args, '--wsrep-recover', `--log-error=${log}`], { encoding: 'utf8', timeout: 60_000 });
  const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
  const position = /WSREP: Recovered position: ([0-9a-f-]{36}:\d+)\s*$/m.exec(text)?.[1];
  return position;
}

/**
 * The `SHOW STATUS` values of a node that tell its place in the cluster, or undefined while it does not answer.
 * @param {number} port
 * @returns {Promise<Record<string, string> | undefined>}
 */
async function wsrepStatus(port) {
  let connection;
  try {
    connection = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root', database: 'mysql', connectTimeout: 2000 });
    const [rows] = await connection.query(
      `SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status', 'wsrep_ready', 'wsrep_connected')`,
    );
    /** @type {Record<string, string>} */
    const status = {};
    for (const row of /** @type {{ Variable_name: string, Value: string }[]} */ (rows)) status[row.Variable_name] = row.Value;
    return status;
  } catch {
    return undefined;
  } finally {
    await connection?.end().catch(() => undefined);
  }
}

/**
 * One statement on a node, on a connection of its own.
 * @param {number} port
 * @param {string} sql
 */
async function runOn(port, sql) {
  const connection = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root', database: 'mysql', connectTimeout: 5000 });
  try {
    await connection.query(sql);
  } finally {
    await connection.end().catch(() => undefined);
  }
}

/**
 * @typedef {object} GaleraNode
 * @property {string} url `mysql://root@127.0.0.1:<port>/mysql`
 * @property {number} port its client port
 * @property {number | undefined} pid the running mariadbd's process id (undefined while it is stopped)
 * @property {() => Promise<void>} kill9 SIGKILLs mariadbd (and its state-transfer scripts), resolves once it is gone
 * @property {() => Promise<void>} start starts it again on its data directory: it rejoins the cluster (IST, or SST
 *   when the cluster's cache no longer has its gap), and resolves once it is Synced in a primary component of every
 *   running, not isolated node
 * @property {() => Promise<void>} isolate cuts it off the group (`gmcast.isolate=1`): it stays up, non-Primary, and
 *   refuses statements (errno 1047); resolves once it and the others see it gone
 * @property {() => Promise<void>} heal lets it back (`gmcast.isolate=0`); resolves once it is Synced again
 * @property {() => Promise<Record<string, string> | undefined>} status its wsrep status (undefined: no answer)
 * @property {() => string} log the tail of its error log
 */

/**
 * @typedef {object} GaleraCluster
 * @property {string[]} urls the nodes' URLs, node 1 first
 * @property {(index: number) => GaleraNode} node node `index` (1, 2 or 3)
 * @property {() => Promise<void>} stop shuts every node down (SIGTERM, SIGKILL after 30 s)
 */

/**
 * Starts a Galera cluster of `size` private MariaDB servers in `dir` (node folders `n1`, `n2`, …; random ports on
 * 127.0.0.1 for the clients, the group communication, IST and SST; privileges on, root@127.0.0.1 connects without a
 * password). Node 1 is bootstrapped (`mariadb-install-db`, `--wsrep-new-cluster`); the others join it from an empty
 * data directory (SST by rsync). Resolves once every node is Synced in a cluster of `size`. No node keeps Node's
 * event loop alive, and every node is SIGKILLed if this process exits without `stop()`.
 * @param {string} dir
 * @param {{ size?: number, name?: string }} [options]
 * @returns {Promise<GaleraCluster>}
 */
export async function startGaleraCluster(dir, options = {}) {
  const size = options.size ?? 3;
  const mariadbd = findProgram('mariadbd');
  const installDb = findProgram('mariadb-install-db');
  const provider = findProvider();
  if (!mariadbd || !installDb || !provider || !galeraInstalled()) {
    throw new Error(`cannot start a Galera cluster: missing ${galeraMissing().join(', ')} (apt-get install mariadb-server galera-4 rsync)`);
  }
  const clusterName = options.name ?? `ndl-test-${process.pid}`;
  const ports = await freePorts(4 * size);
  const nodes = Array.from({ length: size }, (_, i) => ({
    index: i + 1,
    folder: join(dir, `n${i + 1}`),
    client: /** @type {number} */ (ports[4 * i]),
    gcomm: /** @type {number} */ (ports[4 * i + 1]),
    ist: /** @type {number} */ (ports[4 * i + 2]),
    sst: /** @type {number} */ (ports[4 * i + 3]),
  }));
  const sstOwner = process.getuid?.() === 0 ? sstDaemonOwner() : undefined;
  const address = `gcomm://${nodes.map((n) => `127.0.0.1:${n.gcomm}`).join(',')}`;
  /** The running mariadbd of each node (by index), and whether it is isolated. */
  /** @type {Map<number, { process: import('node:child_process').ChildProcess, exited: Promise<void> }>} */
  const running = new Map();
  /** @type {Set<number>} */
  const isolated = new Set();

  // The safety net: a test run that exits without `stop()` (a crash, Ctrl-C) takes its nodes with it.
  const killAll = () => {
    for (const { process: child } of running.values()) killGroup(child, 'SIGKILL');
  };
  process.once('exit', killAll);

  /** @param {typeof nodes[number]} node */
  const logOf = (node) => join(node.folder, 'mariadbd.log');
  /** @param {typeof nodes[number]} node */
  const logTail = (node) => {
    try {
      return readFileSync(logOf(node), 'utf8').slice(-6000);
    } catch {
      return '';
    }
  };

  /** Running nodes that are not isolated: the size of a healthy primary component. */
  const expectedSize = () => [...running.keys()].filter((index) => !isolated.has(index)).length;

  /**
   * Resolves once `node` is Synced in a primary component of `expected()` nodes.
   * @param {typeof nodes[number]} node
   * @param {import('node:child_process').ChildProcess} child
   * @param {() => number} expected
   */
  const waitSynced = async (node, child, expected) => {
    const deadline = Date.now() + START_TIMEOUT_MS;
    /** @type {Record<string, string> | undefined} */
    let last;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`galera node ${node.index} exited (${child.exitCode ?? child.signalCode}): ${logTail(node)}`);
      }
      last = await wsrepStatus(node.client);
      if (
        last?.wsrep_local_state_comment === 'Synced' &&
        last.wsrep_cluster_status === 'Primary' &&
        last.wsrep_ready === 'ON' &&
        Number(last.wsrep_cluster_size) === expected()
      ) {
        return;
      }
      if (Date.now() > deadline) {
        throw new Error(`galera node ${node.index} not Synced in ${START_TIMEOUT_MS} ms (${JSON.stringify(last)}): ${logTail(node)}`);
      }
      await sleep(100);
    }
  };

  /**
   * Starts mariadbd on `node`'s data directory; resolves once it is Synced.
   * @param {typeof nodes[number]} node
   * @param {boolean} bootstrap
   */
  const launch = async (node, bootstrap) => {
    const dataDir = join(node.folder, 'data');
    const tmpDir = join(node.folder, 'tmp');
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(tmpDir, { recursive: true });
    if (bootstrap && !existsSync(join(dataDir, 'mysql'))) {
      const installed = spawnSync(
        /** @type {string} */ (installDb),
        ['--no-defaults', `--datadir=${dataDir}`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=root'],
        { encoding: 'utf8', env: { ...process.env, TMPDIR: tmpDir } },
      );
      if (installed.status !== 0) throw new Error(`mariadb-install-db failed: ${installed.stderr || installed.stdout}`);
      // Privileges on, as on a real cluster: without them the session's user is empty, and a stored procedure created
      // with DEFINER=`` is refused by the other nodes ("Invalid role specification"), which then lack it. root may
      // connect from 127.0.0.1 without a password (the joiners get these tables by state transfer).
      writeFileSync(
        join(node.folder, 'init.sql'),
        "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';\n" +
          "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n",
      );
    }
    const args = [
      '--no-defaults',
      `--datadir=${dataDir}`,
      `--socket=${join(node.folder, 'mariadb.sock')}`,
      `--pid-file=${join(node.folder, 'mariadb.pid')}`,
      `--tmpdir=${tmpDir}`,
      `--port=${node.client}`,
      '--bind-address=127.0.0.1',
      ...(bootstrap && existsSync(join(node.folder, 'init.sql')) ? [`--init-file=${join(node.folder, 'init.sql')}`] : []),
      '--skip-name-resolve',
      '--user=root',
      '--max-connections=500',
      '--innodb-buffer-pool-size=64M',
      '--innodb-log-file-size=32M',
      '--binlog-format=ROW',
      '--innodb-autoinc-lock-mode=2',
      '--wsrep-on=ON',
      `--wsrep-provider=${provider}`,
      `--wsrep-cluster-name=${clusterName}`,
      `--wsrep-cluster-address=${address}`,
      `--wsrep-node-name=n${node.index}`,
      `--wsrep-node-address=127.0.0.1:${node.gcomm}`,
      `--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:${node.gcomm};ist.recv_addr=127.0.0.1:${node.ist};gcache.size=32M`,
      '--wsrep-sst-method=rsync',
      `--wsrep-sst-receive-address=127.0.0.1:${node.sst}`,
    ];
    const position = bootstrap ? undefined : recoveredPosition(/** @type {string} */ (mariadbd), args, node.folder);
    openToSst(node.folder, sstOwner);
    const log = openSync(logOf(node), 'a');
    const child = spawn(
      /** @type {string} */ (mariadbd),
      [...args, ...(position ? [`--wsrep-start-position=${position}`] : []), ...(bootstrap ? ['--wsrep-new-cluster'] : [])],
      // A process group of its own: kill9 and stop reach the state-transfer scripts and rsync it runs.
      { stdio: ['ignore', log, log], detached: true, env: { ...process.env, TMPDIR: tmpDir } },
    );
    closeSync(log);
    const exited = new Promise((resolve) => child.once('exit', () => resolve(undefined)));
    // The servers must not keep Jest's process alive: the global teardown stops them.
    child.unref();
    running.set(node.index, { process: child, exited });
    try {
      await waitSynced(node, child, expectedSize);
    } catch (error) {
      killGroup(child, 'SIGKILL');
      await held(exited);
      running.delete(node.index);
      throw error;
    }
  };

  /**
   * SIGKILLs `node`'s mariadbd and its process group, resolves once it exited.
   * @param {typeof nodes[number]} node
   */
  const kill9 = async (node) => {
    const current = running.get(node.index);
    if (!current) return;
    killGroup(current.process, 'SIGKILL');
    await held(current.exited);
    running.delete(node.index);
    isolated.delete(node.index);
  };

  /**
   * Waits until every running, not isolated node is Synced in a primary component of all of them.
   */
  const othersSettled = async () => {
    for (const [index, { process: child }] of running) {
      if (isolated.has(index)) continue;
      await waitSynced(/** @type {typeof nodes[number]} */ (nodes[index - 1]), child, expectedSize);
    }
  };

  /** @type {GaleraCluster} */
  const cluster = {
    urls: nodes.map((n) => `mysql://root@127.0.0.1:${n.client}/mysql`),
    node(index) {
      const node = nodes[index - 1];
      if (!node) throw new Error(`no galera node ${index} (1…${size})`);
      return {
        url: `mysql://root@127.0.0.1:${node.client}/mysql`,
        port: node.client,
        get pid() {
          return running.get(node.index)?.process.pid;
        },
        kill9: async () => {
          await kill9(node);
          await othersSettled();
        },
        start: async () => {
          if (running.has(node.index)) return;
          await launch(node, false);
          await othersSettled();
        },
        isolate: async () => {
          await runOn(node.client, `SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'`);
          isolated.add(node.index);
          const deadline = Date.now() + 30_000;
          for (;;) {
            const status = await wsrepStatus(node.client);
            if (status?.wsrep_cluster_status === 'non-Primary') break;
            if (Date.now() > deadline) throw new Error(`galera node ${index} still ${JSON.stringify(status)} after isolate`);
            await sleep(50);
          }
          await othersSettled();
        },
        heal: async () => {
          await runOn(node.client, `SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'`);
          isolated.delete(node.index);
          await othersSettled();
        },
        status: () => wsrepStatus(node.client),
        log: () => logTail(node),
      };
    },
    async stop() {
      await Promise.all(
        [...running.entries()].map(async ([index, { process: child, exited }]) => {
          killGroup(child, 'SIGTERM');
          await held(Promise.race([exited, sleep(30_000, undefined, { ref: false })]));
          if (child.exitCode === null && child.signalCode === null) {
            killGroup(child, 'SIGKILL');
            await held(exited);
          }
          running.delete(index);
        }),
      );
      process.removeListener('exit', killAll);
    },
  };

  try {
    // Node 1 bootstraps the cluster; the others join one at a time (each by SST from a Synced donor).
    await launch(/** @type {typeof nodes[number]} */ (nodes[0]), true);
    for (const node of nodes.slice(1)) await launch(node, false);
    await othersSettled();
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

/**
 * `promise`, with the event loop kept alive until it settles: the nodes are unref'd, so awaiting their exit alone
 * would let a process with nothing else to do end before it saw them gone.
 * @template T
 * @param {Promise<T>} promise
 * @returns {Promise<T>}
 */
async function held(promise) {
  const keepAlive = setInterval(() => undefined, 1000);
  try {
    return await promise;
  } finally {
    clearInterval(keepAlive);
  }
}

/**
 * Sends `signal` to the process group of `child` (it leads one: spawned `detached`), or to `child` alone when the
 * group is gone.
 * @param {import('node:child_process').ChildProcess} child
 * @param {NodeJS.Signals} signal
 */
function killGroup(child, signal) {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}
