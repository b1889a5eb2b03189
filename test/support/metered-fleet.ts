import type { LockApp } from './lock-app.js';
import type { TestDialect } from './dialects.js';
import { type InMemorySdk, registerInMemorySdk } from './otel-sdk.js';
import type { TestDatabase } from './test-database.js';

/** What a metrics spec's describe block shares: the in-memory SDK, a test database, and the apps to close. */
export interface MeteredFleet {
  readonly db: TestDatabase;
  readonly sdk: InMemorySdk;
  /** The apps started by the tests: closed after them. */
  readonly apps: LockApp[];
}

/**
 * Registers the enclosing describe block's hooks: the in-memory OpenTelemetry SDK registered and a database of
 * `dialect` created before its tests (the SDK first, as an application registers it before it starts); the apps
 * closed, the database dropped and the SDK shut down after them. The returned object reads them from the first test on.
 */
export function useMeteredFleet(dialect: TestDialect): MeteredFleet {
  const apps: LockApp[] = [];
  let db: TestDatabase | undefined;
  let sdk: InMemorySdk | undefined;
  beforeAll(async () => {
    sdk = registerInMemorySdk();
    db = await dialect.createDatabase();
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await db?.drop();
    await sdk?.shutdown();
  });
  return {
    get db() {
      return db!;
    },
    get sdk() {
      return sdk!;
    },
    apps,
  };
}
