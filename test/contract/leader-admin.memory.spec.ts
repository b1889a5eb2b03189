import { InMemoryLockDatabase, LeaderService, LockAdminService, LockTestingModule } from 'nestjs-db-locks';
import { Test } from '@nestjs/testing';
import { until } from '../support/until.js';
import { describeLeaderAdminContract } from './leader-admin.contract.js';
import { MEMORY_ENGINE_TARGET } from './memory-engine.store.js';

describeLeaderAdminContract(MEMORY_ENGINE_TARGET);

describe('the leaders an operator sees on the in-memory store, past a lease', () => {
  it('no longer shows a leader whose lease is over, before any reaper has freed its grant (as the SQL stores)', async () => {
    const database = new InMemoryLockDatabase();
    const moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot({ appId: 'frozen', database, leaseMs: 60_000, reaperIntervalMs: 600_000 })],
    }).compile();
    moduleRef.useLogger(false);
    const app = await moduleRef.init();
    try {
      const leaders = app.get(LeaderService);
      leaders.campaign('frozen-role', (signal) => new Promise((resolve) => signal.addEventListener('abort', resolve)));
      await until(() => leaders.isLeader('frozen-role'));
      const [before] = await app.get(LockAdminService).getLeaders();
      expect(before!.leader).toMatchObject({ appId: 'frozen', term: 1 });
      database.log.get(before!.leader!.stamp)!.leaseExpires = Date.now() - 1000; // the table's row, as a frozen leader leaves it
      expect(await app.get(LockAdminService).getLeaders()).toEqual([{ role: 'frozen-role', leader: null, term: 1, candidates: [] }]);
    } finally {
      await app.close();
    }
  });
});
