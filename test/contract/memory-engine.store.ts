import { Test } from '@nestjs/testing';
import { InMemoryLockDatabase, LockService, LockTestingModule } from 'nestjs-db-locks';
import type { EngineTarget } from './lock-engine.contract.js';

/** The in-memory store of `LockTestingModule` as a contract's target: each instance a testing module on one database. */
export const MEMORY_ENGINE_TARGET: EngineTarget = {
  name: 'the in-memory store (LockTestingModule)',
  describe,
  async open() {
    const database = new InMemoryLockDatabase();
    return {
      async start(options) {
        const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ ...options, database })] }).compile();
        moduleRef.useLogger(false);
        const app = await moduleRef.init();
        return { app, locks: app.get(LockService), close: () => app.close() };
      },
      drop: async () => undefined,
    };
  },
};
