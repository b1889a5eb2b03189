import { createLockApp } from '../support/lock-app.js';
import { createTestDatabase } from '../support/test-database.js';
import { describeLeaderElectionContract } from './leader-election.contract.js';

describeLeaderElectionContract({
  name: 'PostgreSQL',
  describe,
  async open() {
    const db = await createTestDatabase();
    return { start: (options) => createLockApp(db.url, options), drop: () => db.drop() };
  },
});
