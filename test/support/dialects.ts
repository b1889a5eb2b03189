import { createMysqlTestDatabase, describeOnMysql } from './mysql-test-database.js';
import { canStartMariadb, startRestartableMariadb, startRestartablePostgres, type RestartableServer } from './restartable-server.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** A database dialect the same spec runs on: how to create its test database, and its `describe`. */
export interface TestDialect {
  readonly name: 'PostgreSQL' | 'MariaDB';
  readonly createDatabase: (options?: { migrate?: boolean }) => Promise<TestDatabase>;
  /** `describe`, or `describe.skip` when the suite has no server of this dialect. */
  readonly describe: jest.Describe;
  /** Starts a server of the test's own that it may stop and start again. */
  readonly startRestartable: () => Promise<RestartableServer>;
  /** `describe`, or `describe.skip` when this machine cannot start a server of this dialect. */
  readonly describeRestartable: jest.Describe;
  /** Whether `TestDatabase.refuseConnections` works on this dialect (PostgreSQL's `ALLOW_CONNECTIONS`). */
  readonly canRefuseConnections: boolean;
}

/** PostgreSQL and MariaDB, for the specs that run on both. */
export const DIALECTS: readonly TestDialect[] = [
  {
    name: 'PostgreSQL',
    createDatabase: createTestDatabase,
    describe,
    startRestartable: startRestartablePostgres,
    describeRestartable: describe, // embedded PostgreSQL comes with the dev dependencies
    canRefuseConnections: true,
  },
  {
    name: 'MariaDB',
    createDatabase: createMysqlTestDatabase,
    describe: describeOnMysql,
    startRestartable: startRestartableMariadb,
    describeRestartable: canStartMariadb() ? describe : describe.skip,
    canRefuseConnections: false,
  },
];

/** The names of a log row's group, as either dialect's driver returns them (an array, or JSON text). */
export function namesOf(value: unknown): string[] {
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(parsed) ? parsed.map(String) : [];
}
