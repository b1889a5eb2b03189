// Plain JavaScript: Jest loads its global setup outside its module mapper and TypeScript transform.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../../sample-app/src/database/embedded-postgres.js';

/**
 * Gives the suite a PostgreSQL server: the one in `DATABASE_URL` when set, otherwise an embedded one started here.
 * Each test file then creates its own database on it (`test/support/test-database.ts`).
 */
export default async function globalSetup() {
  if (process.env.DATABASE_URL) {
    process.env.NDL_TEST_ADMIN_URL = process.env.DATABASE_URL;
    return;
  }
  const parent = mkdtempSync(join(tmpdir(), 'ndl-test-'));
  const database = await startEmbeddedPostgres({
    dataDir: join(parent, 'pg'),
    persistent: false,
  });
  Object.assign(globalThis, { __ndlEmbedded: database, __ndlTempDir: parent });
  process.env.NDL_TEST_ADMIN_URL = database.url;
}
