// Plain JavaScript: loaded by Jest's global setup (outside its transform) as well as by the topology specs.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** Where Debian's `pgbouncer` package puts its program. */
const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path));

/**
 * A private PgBouncer in front of the suite's PostgreSQL.
 * @typedef {object} PgBouncer
 * @property {(url: string) => string} through `url` (a database of the suite's server) through this PgBouncer
 * @property {string} version the version it reports, e.g. `1.18.0`
 * @property {number} port its TCP port on 127.0.0.1
 * @property {() => Promise<void>} stop
 */

/**
 * Whether the PgBouncer specs run: with Debian's `pgbouncer` installed; without it they are skipped, or fail when
 * `REQUIRE_PGBOUNCER=1` (CI, which installs it).
 * @returns {boolean}
 */
export function pgbouncerInstalled() {
  if (PGBOUNCER) return true;
  if (process.env.REQUIRE_PGBOUNCER === '1') {
    throw new Error('REQUIRE_PGBOUNCER=1 but pgbouncer is not installed (apt-get install pgbouncer)');
  }
  process.stderr.write('pgbouncer is not installed (apt-get install pgbouncer): the PgBouncer specs are skipped\n');
  return false;
}

/** @returns {Promise<number>} a TCP port that was free a moment ago */
async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts PgBouncer in `mode` on a port of its own, in front of the suite's PostgreSQL (`NDL_TEST_ADMIN_URL`), with a
 * wildcard database entry (any database of that server), clients trusted, the server password from its auth file, and
 * `poolSize` server connections per database and user, and `settings` added to its `[pgbouncer]` section (e.g.
 * `{ server_round_robin: 1 }`: it hands out its server connections in turn instead of the last one given back).
 * Resolves once it answers a query.
 * @param {'transaction' | 'session' | 'statement'} mode
 * @param {number} [poolSize]
 * @param {Record<string, string | number>} [settings]
 * @returns {Promise<PgBouncer>}
 */
export async function startPgBouncer(mode, poolSize = 10, settings = {}) {
  if (!PGBOUNCER) throw new Error('pgbouncer is not installed');
  const admin = process.env.NDL_TEST_ADMIN_URL;
  if (!admin) throw new Error('NDL_TEST_ADMIN_URL is not set: run the tests through `npm test`');
  const server = new URL(admin);
  const dir = mkdtempSync(join(tmpdir(), 'ndl-pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const user = decodeURIComponent(server.username);
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" "${decodeURIComponent(server.password)}"\n`, { mode: 0o644 });
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${mode}`,
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits,options',
      ...Object.entries(settings).map(([key, value]) => `${key} = ${value}`),
      // Debian's pgbouncer refuses to run as root: it drops to the postgres user (which embedded PostgreSQL also uses).
      ...(process.getuid?.() === 0 ? ['user = postgres'] : []),
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const child = spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (/** @type {Buffer} */ chunk) => (log = (log + chunk.toString()).slice(-4000)));
  /** @param {string} url */
  const through = (url) => {
    const target = new URL(url);
    target.hostname = '127.0.0.1';
    target.port = String(port);
    return target.toString();
  };
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: through(admin) });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (child.exitCode !== null || attempt >= 100) {
        await stop();
        throw new Error(`pgbouncer did not start: ${String(error)}\n${log}`);
      }
      await sleep(50);
    }
  }
  const version = /PgBouncer (\S+)/.exec(log)?.[1] ?? 'unknown';
  return { through, version, port, stop };
}
