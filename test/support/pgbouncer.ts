import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

/** Where Debian's `pgbouncer` package puts its program. */
const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path));

/** A private PgBouncer of one test file, in front of the suite's PostgreSQL. */
export interface PgBouncer {
  /** `url` of a database of the suite's server, through this PgBouncer. */
  through(url: string): string;
  /** The version it reports, e.g. `1.18.0`. */
  readonly version: string;
  stop(): Promise<void>;
}

/**
 * Whether the PgBouncer specs run: with Debian's `pgbouncer` installed, or fail without it when `REQUIRE_PGBOUNCER=1`
 * (CI, which installs it), or skip.
 */
export function pgbouncerInstalled(): boolean {
  if (PGBOUNCER) return true;
  if (process.env.REQUIRE_PGBOUNCER === '1') {
    throw new Error('REQUIRE_PGBOUNCER=1 but pgbouncer is not installed (apt-get install pgbouncer)');
  }
  process.stderr.write('pgbouncer is not installed (apt-get install pgbouncer): the PgBouncer specs are skipped\n');
  return false;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts PgBouncer in `mode` on a port of its own, in front of the suite's PostgreSQL (`NDL_TEST_ADMIN_URL`), with a
 * wildcard database entry (any database of that server), clients trusted, the server password from its auth file, and
 * `poolSize` server connections per database and user. Resolves once it answers a query.
 */
export async function startPgBouncer(mode: 'transaction' | 'session', poolSize = 10): Promise<PgBouncer> {
  if (!PGBOUNCER) throw new Error('pgbouncer is not installed');
  const server = new URL(process.env.NDL_TEST_ADMIN_URL!);
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
      // Debian's pgbouncer refuses to run as root: it drops to the postgres user (which embedded PostgreSQL also uses).
      ...(process.getuid?.() === 0 ? ['user = postgres'] : []),
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const child: ChildProcess = spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const through = (url: string) => {
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
    const client = new pg.Client({ connectionString: through(process.env.NDL_TEST_ADMIN_URL!) });
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
  return { through, version, stop };
}
