// Plain JavaScript: Jest loads its global setup outside its module mapper and TypeScript transform.
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { galeraMissing, startGaleraCluster } from '../../support/galera-cluster.mjs';

/**
 * Gives the Galera specs (jest.galera.config.js) a MariaDB Galera cluster of three nodes: the one in `GALERA_URLS`
 * (comma-separated `mysql://` URLs of its nodes, node 1 first) when set, otherwise one started here from the installed
 * `mariadb-server`, `galera-4` and `rsync` (test/support/galera-cluster.mjs). Its node URLs go to the specs in
 * `NDL_TEST_GALERA_URLS`. Without either the specs are skipped, unless `REQUIRE_GALERA=1` (CI), which makes that an
 * error. A cluster started here can also be hurt by the specs, through `NDL_TEST_GALERA_CONTROL` (below).
 */
export default async function galeraGlobalSetup() {
  if (process.env.GALERA_URLS) {
    process.env.NDL_TEST_GALERA_URLS = process.env.GALERA_URLS;
    return;
  }
  const missing = galeraMissing();
  if (missing.length > 0) {
    if (process.env.REQUIRE_GALERA === '1') {
      throw new Error(`REQUIRE_GALERA=1 but no GALERA_URLS and missing ${missing.join(', ')} (apt-get install mariadb-server galera-4 rsync)`);
    }
    process.stderr.write(`\nNo GALERA_URLS and missing ${missing.join(', ')}: the Galera specs are skipped.\n`);
    return;
  }
  const parent = mkdtempSync(join(tmpdir(), 'ndl-galera-'));
  Object.assign(globalThis, { __ndlGaleraDir: parent });
  const started = performance.now();
  const cluster = await startGaleraCluster(join(parent, 'cluster'));
  Object.assign(globalThis, { __ndlGalera: cluster });
  process.stderr.write(`\nGalera cluster of ${cluster.urls.length} nodes started in ${Math.round(performance.now() - started)} ms.\n`);
  process.env.NDL_TEST_GALERA_URLS = cluster.urls.join(',');
  const control = await startControl(cluster);
  Object.assign(globalThis, { __ndlGaleraControl: control.server });
  process.env.NDL_TEST_GALERA_CONTROL = control.url;
}

/**
 * The specs run in Jest's workers (or, with --runInBand, in a context of their own), away from the cluster object of
 * this process: they ask for `kill9`, `start`, `isolate` and `heal` of a node with `POST <control>/nodes/<i>/<action>`
 * (test/galera/support/galera.ts), answered 200 once it is done, 500 with the error's text otherwise.
 * @param {import('../../support/galera-cluster.mjs').GaleraCluster} cluster
 * @returns {Promise<{ server: import('node:http').Server, url: string }>}
 */
async function startControl(cluster) {
  const actions = /** @type {const} */ (['kill9', 'start', 'isolate', 'heal']);
  const server = createServer((request, response) => {
    const match = /^\/nodes\/(\d+)\/(\w+)$/.exec(request.url ?? '');
    const action = /** @type {typeof actions[number] | undefined} */ (actions.find((a) => a === match?.[2]));
    if (request.method !== 'POST' || !match || !action) {
      response.writeHead(404).end('POST /nodes/<index>/kill9|start|isolate|heal');
      return;
    }
    Promise.resolve()
      .then(() => cluster.node(Number(match[1]))[action]())
      .then(
        () => response.writeHead(200).end('done'),
        (/** @type {unknown} */ error) => response.writeHead(500).end(String(error instanceof Error ? error.stack : error)),
      );
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  server.unref();
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return { server, url: `http://127.0.0.1:${port}` };
}
