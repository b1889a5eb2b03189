import { createLockApp } from '../support/lock-app.js';
import { DIALECTS } from '../support/dialects.js';
import type { EngineTarget } from './lock-engine.contract.js';

/** PostgreSQL and MariaDB as a contract's targets: a test database of their own, each instance a `LockModule` app. */
export const SQL_ENGINE_TARGETS: readonly EngineTarget[] = DIALECTS.map((dialect) => ({
  name: dialect.name,
  describe: dialect.describe,
  async open() {
    const db = await dialect.createDatabase();
    return { start: (options) => createLockApp(db.url, options), drop: () => db.drop() };
  },
}));
