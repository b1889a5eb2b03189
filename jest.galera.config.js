import base from './jest.config.js';

/**
 * The Galera specs (test/galera, `npm run test:galera`): the suite's Jest setup (ts-jest in ESM mode, the module
 * mapper), on a MariaDB Galera cluster of three nodes that their global setup starts once (or `GALERA_URLS`), instead of
 * the suite's PostgreSQL and MariaDB. The main configuration leaves these files out.
 * @type {import('jest').Config}
 */
export default {
  ...base,
  testMatch: ['<rootDir>/test/galera/**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '<rootDir>/test/galera/support/galera-global-setup.mjs',
  globalTeardown: '<rootDir>/test/galera/support/galera-global-teardown.mjs',
  testTimeout: 120000,
};
