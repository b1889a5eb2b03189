// Plain JavaScript: Jest loads its global setup outside its module mapper and TypeScript transform.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../../sample-app/src/database/embedded-postgres.js';
import { mariadbInstalled, startPrivateMariadb } from './mariadb-server.mjs';
import { startPgBouncer } from './pgbouncer-server.mjs';

/**
 * Gives the suite a MySQL/MariaDB server for the specs of that dialect: the one in `MYSQL_URL` when set, otherwise a
 * private MariaDB started here from the installed `mariadb-server`. Without either they are skipped, unless
 * `REQUIRE_MARIADB=1` (CI), which makes that an error.
 * @param {string} parent the suite's temporary folder
 */
async function setUpMysql(parent) {
  if (process.env.MYSQL_URL) {
    process.env.NDL_TEST_MYSQL_URL = process.env.MYSQL_URL;
    return;
  }
  if (!mariadbInstalled()) {
    if (process.env.REQUIRE_MARIADB === '1') {
      throw new Error('REQUIRE_MARIADB=1 but no MYSQL_URL and no mariadb-server installed (apt-get install mariadb-server)');
    }
    process.stderr.write('\nNo MYSQL_URL and no mariadb-server installed: the MySQL/MariaDB specs are skipped.\n');
    return;
  }
  const server = await startPrivateMariadb(join(parent, 'mariadb'));
  Object.assign(globalThis, { __ndlMariadb: server });
  process.env.NDL_TEST_MYSQL_URL = server.url;
}

/**
 * Gives the suite a PostgreSQL server: the one in `DATABASE_URL` when set, otherwise an embedded one started here.
 * Each test file then creates its own database on it (`test/support/test-database.ts`). Then a MySQL/MariaDB one.
 */
export default async function globalSetup() {
  const parent = mkdtempSync(join(tmpdir(), 'ndl-test-'));
  Object.assign(globalThis, { __ndlTempDir: parent });
  await setUpMysql(parent);
  if (process.env.DATABASE_URL) {
    process.env.NDL_TEST_ADMIN_URL = process.env.DATABASE_URL;
  } else {
    const database = await startEmbeddedPostgres({
      dataDir: join(parent, 'pg'),
      persistent: false,
    });
    Object.assign(globalThis, { __ndlEmbedded: database });
    process.env.NDL_TEST_ADMIN_URL = database.url;
  }
  await setUpPgBouncer();
}

/**
 * With `NDL_TEST_PGBOUNCER=transaction` (or `session`), a PgBouncer in that mode in front of the suite's PostgreSQL:
 * the test applications' DataSources then go through it (`test/support/lock-app.ts`), with `directUrl` in
 * transaction mode. `NDL_TEST_PGBOUNCER=transaction npx jest test/integration/lock-waiting.spec.ts` runs a spec so.
 */
async function setUpPgBouncer() {
  const mode = process.env.NDL_TEST_PGBOUNCER;
  if (!mode) return;
  if (mode !== 'transaction' && mode !== 'session') throw new Error(`NDL_TEST_PGBOUNCER must be transaction or session (got ${mode})`);
  const bouncer = await startPgBouncer(mode, 20);
  Object.assign(globalThis, { __ndlPgBouncer: bouncer });
  process.env.NDL_TEST_PGBOUNCER_PORT = String(bouncer.port);
}
