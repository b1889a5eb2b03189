// Plain JavaScript: loaded by Jest's global setup, outside its module mapper and TypeScript transform.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where Debian's `mariadb-server` (or MySQL's) puts its programs. */
const SEARCH_PATH = ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin'];

/**
 * The first of `names` found on `PATH` or where Debian puts server programs (shared with the Galera cluster's support).
 * @param {...string} names
 */
export function findProgram(...names) {
  for (const dir of [...(process.env.PATH ?? '').split(':'), ...SEARCH_PATH]) {
    for (const name of names) {
      const path = join(dir, name);
      if (dir && existsSync(path)) return path;
    }
  }
  return undefined;
}

/** True when this machine has a MariaDB server installed that the tests can start. */
export function mariadbInstalled() {
  return findProgram('mariadbd') !== undefined && findProgram('mariadb-install-db') !== undefined;
}

/**
 * A port free on 127.0.0.1 now (shared with the Galera cluster's support).
 * @returns {Promise<number>}
 */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a private MariaDB server of the tests in `dir` (a new data directory, a random port on 127.0.0.1, no grant
 * tables: any user may connect without a password), and resolves once it accepts connections. `stop()` shuts it down
 * (a clean shutdown), `start()` starts it again on the same data directory and port.
 * @param {string} dir
 * @param {readonly string[]} [options] more server options (e.g. `--wait-timeout=2`); `--grant-tables` turns the
 *   privilege checks on (then give root@127.0.0.1 its privileges with an `--init-file`)
 * @returns {Promise<{ url: string, stop(): Promise<void>, start(): Promise<void> }>}
 */
export async function startPrivateMariadb(dir, options = []) {
  const mariadbd = findProgram('mariadbd');
  const installDb = findProgram('mariadb-install-db');
  if (!mariadbd || !installDb) throw new Error('mariadbd is not installed (apt-get install mariadb-server)');
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  // A temporary folder of its own: in the shared /tmp, the bootstrap of two servers started at once (by two test runs
  // on one machine) failed to delete its temporary tables ("Error on delete of '/tmp/#sql-temptable-…'").
  const tmpDir = join(dir, 'tmp');
  mkdirSync(tmpDir, { recursive: true });
  const user = process.getuid?.() === 0 ? ['--user=root'] : [];
  const installed = spawnSync(
    installDb,
    ['--no-defaults', `--datadir=${dataDir}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...user],
    { encoding: 'utf8', env: { ...process.env, TMPDIR: tmpDir } },
  );
  if (installed.status !== 0) throw new Error(`mariadb-install-db failed: ${installed.stderr || installed.stdout}`);
  const port = await freePort();
  const url = `mysql://root@127.0.0.1:${port}/mysql`;
  /** Starts mariadbd on the data directory; resolves once it accepts connections. */
  const launch = async () => {
    const server = spawn(
      mariadbd,
      [
        '--no-defaults',
        `--datadir=${dataDir}`,
        `--socket=${join(dir, 'mariadb.sock')}`,
        `--pid-file=${join(dir, 'mariadb.pid')}`,
        `--tmpdir=${tmpDir}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        ...(options.includes('--grant-tables') ? [] : ['--skip-grant-tables']),
        '--skip-name-resolve',
        '--max-connections=500',
        '--innodb-buffer-pool-size=128M',
        '--innodb-log-file-size=64M',
        ...options.filter((option) => option !== '--grant-tables'),
        ...user,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    server.stderr.on('data', (chunk) => {
      log = (log + String(chunk)).slice(-4000);
    });
    const exited = new Promise((resolve) => server.once('exit', resolve));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`mariadbd exited at start-up: ${log}`);
      if (log.includes('ready for connections')) break;
      if (Date.now() > deadline) {
        server.kill('SIGKILL');
        throw new Error(`mariadbd did not start within 60 s: ${log}`);
      }
      await sleep(100);
    }
    // The server must not keep Jest's process alive: the global teardown stops it.
    server.unref();
    /** @type {import('node:net').Socket} */ (/** @type {unknown} */ (server.stderr)).unref();
    return { server, exited };
  };
  /** @type {Awaited<ReturnType<typeof launch>> | undefined} */
  let running = await launch();
  return {
    url,
    async stop() {
      const current = running;
      running = undefined;
      if (!current || current.server.exitCode !== null) return;
      current.server.kill('SIGTERM');
      await Promise.race([current.exited, sleep(30_000, undefined, { ref: false })]);
      if (current.server.exitCode === null) current.server.kill('SIGKILL');
    },
    async start() {
      running ??= await launch();
    },
  };
}
