/** @type {import('jest').Config} */
export default {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  // The Galera specs run on a cluster of their own: jest.galera.config.js (`npm run test:galera`).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/galera/'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^nestjs-db-locks$': '<rootDir>/lib/index.ts',
    '^nestjs-db-locks/terminus$': '<rootDir>/lib/health/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.json' }],
  },
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  testTimeout: 60000,
  // The files run one after another (2 cores), in a worker that is replaced once it holds more than this after a
  // file: ESM test modules under --experimental-vm-modules are never freed, and the whole suite in one process grew
  // past 4 GB, where garbage collection stalled the event loop for seconds and timed tests out late in the run.
  maxWorkers: 1,
  workerIdleMemoryLimit: '1.5GB',
};
