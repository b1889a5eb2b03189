import { createLockApp } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import { describeLeaderAdminContract } from './leader-admin.contract.js';

describeLeaderAdminContract({
  name: 'MariaDB',
  describe: describeOnMysql,
  async open() {
    const db = await createMysqlTestDatabase();
    return { start: (options) => createLockApp(db.url, options), drop: () => db.drop() };
  },
});
