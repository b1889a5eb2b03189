import { createLockApp } from '../support/lock-app.js';
import { createTestDatabase } from '../support/test-database.js';
import { describeLeaderAdminContract } from './leader-admin.contract.js';

describeLeaderAdminContract({
  name: 'PostgreSQL',
  describe,
  async open() {
    const db = await createTestDatabase();
    return { start: (options) => createLockApp(db.url, options), drop: () => db.drop() };
  },
});
