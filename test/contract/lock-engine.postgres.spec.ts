import { createLockApp } from '../support/lock-app.js';
import { createTestDatabase } from '../support/test-database.js';
import { describeLockEngineContract } from './lock-engine.contract.js';

describeLockEngineContract({
  name: 'PostgreSQL',
  describe,
  async open() {
    const db = await createTestDatabase();
    return { start: (options) => createLockApp(db.url, options), drop: () => db.drop() };
  },
});
