import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { schemaSnapshot } from '../support/schema-snapshot.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const SNAPSHOT = fileURLToPath(new URL('../../docs/schema.sql', import.meta.url));

/** `docs/schema.sql` shows readers the whole schema and every function as the migrations leave them. */
describe('docs/schema.sql', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('is what the migrations create (npm run schema:update writes it anew)', async () => {
    const actual = await schemaSnapshot(db);
    if (process.env.UPDATE_SCHEMA_SNAPSHOT === '1') writeFileSync(SNAPSHOT, actual);
    expect(readFileSync(SNAPSHOT, 'utf8')).toBe(actual);
  });
});
