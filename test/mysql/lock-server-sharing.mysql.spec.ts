import { AppIdInUseError } from 'nestjs-db-locks';
import * as SQL from '../../lib/store/mysql/mysql-lock.queries.sql.js';
import { createLockApp, trackApps } from '../support/lock-app.js';
import { createMysqlTestDatabase, describeOnMysql } from '../support/mysql-test-database.js';
import type { TestDatabase } from '../support/test-database.js';

describeOnMysql('MySQL/MariaDB: one server, several applications', () => {
  const apps = trackApps(createLockApp);
  const databases: TestDatabase[] = [];
  beforeAll(async () => {
    databases.push(await createMysqlTestDatabase(), await createMysqlTestDatabase());
  });
  afterEach(() => apps.closeAll());
  afterAll(() => Promise.all(databases.map((db) => db.drop())));

  // GET_LOCK names are server-wide; PostgreSQL's advisory locks are per database: the app id lock is now too.
  it('two applications in two databases of one server may share an appId; a twin in the same database is refused', async () => {
    const [first, second] = databases as [TestDatabase, TestDatabase];
    const a = await apps.start(first.url, { appId: 'shared-id' });
    const b = await apps.start(second.url, { appId: 'shared-id' });
    expect(await a.locks.tryLocks(['X_WRITE'])).toBeGreaterThan(0);
    expect(await b.locks.tryLocks(['X_WRITE'])).toBeGreaterThan(0); // another database, other locks
    await expect(createLockApp(first.url, { appId: 'shared-id' })).rejects.toBeInstanceOf(AppIdInUseError);
  });

  // `VALUES(col)` in ON DUPLICATE KEY UPDATE warns on MySQL 8.0.20+ (1287); its replacement is not MariaDB's.
  it('upserts without the deprecated VALUES(col), and they still update', async () => {
    for (const text of [SQL.UPSERT_PERMITS, SQL.registerWaiter(3)]) expect(text).not.toMatch(/VALUES\s*\(\s*\w+\s*\)/);
    const [db] = databases as [TestDatabase];
    const app = await apps.start(db.url, { appId: 'upserts' });
    await app.locks.setLockPermits('U', 'read', 3);
    await app.locks.setLockPermits('U', 'read', 4);
    expect(app.locks.getLockPermits('U')).toMatchObject({ read: 4 });
    expect(await db.query(`SELECT permits FROM locking_permissions WHERE lock_name = 'U'`)).toEqual([{ permits: 4 }]);
  });
});
