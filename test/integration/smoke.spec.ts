import { createLockApp } from '../support/lock-app.js';
import { createTestDatabase } from '../support/test-database.js';

it('smoke', async () => {
  const db = await createTestDatabase();
  const a = await createLockApp(db.url, { appId: 'a' });
  const s = await a.locks.tryLocks(['A_WRITE']);
  expect(s).toBeGreaterThan(0);
  expect(await a.locks.tryLocks(['A_READ'])).toBe(0);
  await a.locks.releaseLocks(s);
  await a.close();
  await db.drop();
});
