import { Test } from '@nestjs/testing';
import { InMemoryLockDatabase, LockService, LockTestingModule } from 'nestjs-db-locks';
import { describeLeaderAdminContract } from './leader-admin.contract.js';

describeLeaderAdminContract({
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
});
