import { DIALECTS } from '../support/dialects.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp, useTwoInstances } from '../support/lock-app.js';

for (const dialect of DIALECTS) dialect.describe(`permits rules (two instances on one database) on ${dialect.name}`, () => {
  const suite = useTwoInstances(dialect.createDatabase);
  afterEach(async () => {
    await suite.db.query('DELETE FROM locking');
    await suite.db.query('DELETE FROM locking_permissions');
    await Promise.all([suite.one.locks.refreshLockPermits(), suite.two.locks.refreshLockPermits()]);
  });

  it('write permits 1: a second writer is refused until the first releases', async () => {
    const stamp = await suite.one.locks.tryLocks(['A_WRITE']);
    expect(stamp).toBeGreaterThan(0);
    expect(await suite.two.locks.tryLocks(['A_WRITE'])).toBe(0);
    expect(await suite.one.locks.tryLocks(['A_WRITE'])).toBe(0); // no implicit re-entrancy in the engine
    await suite.one.locks.releaseLocks(stamp);
    expect(await suite.two.locks.tryLocks(['A_WRITE'])).toBeGreaterThan(0);
  });

  it('write permits 3: three writers, the fourth is refused', async () => {
    await suite.one.locks.setLockPermits('A', 'write', 3);
    const stamps = [
      await suite.one.locks.tryLocks(['A_WRITE']),
      await suite.two.locks.tryLocks(['A_WRITE']),
      await suite.one.locks.tryLocks(['A_WRITE']),
    ];
    expect(stamps.every((s) => s > 0)).toBe(true);
    expect(await suite.two.locks.tryLocks(['A_WRITE'])).toBe(0);
    await suite.two.locks.releaseLocks(stamps[1]!);
    expect(await suite.two.locks.tryLocks(['A_WRITE'])).toBeGreaterThan(0);
  });

  it('a held read refuses writers, a held write refuses readers', async () => {
    await suite.one.locks.setLockPermits('A', 'read', 5);
    await suite.one.locks.setLockPermits('A', 'write', 5);
    const read = await suite.one.locks.tryLocks(['A_READ']);
    expect(read).toBeGreaterThan(0);
    expect(await suite.two.locks.tryLocks(['A_WRITE'])).toBe(0);
    await suite.one.locks.releaseLocks(read);
    const write = await suite.two.locks.tryLocks(['A_WRITE']);
    expect(write).toBeGreaterThan(0);
    expect(await suite.one.locks.tryLocks(['A_READ'])).toBe(0);
  });

  it('read permits 1: one reader at a time', async () => {
    expect(await suite.one.locks.tryLocks(['A_READ'])).toBeGreaterThan(0);
    expect(await suite.two.locks.tryLocks(['A_READ'])).toBe(0);
  });

  it('read permits 5: five readers, the sixth is refused', async () => {
    await suite.two.locks.setLockPermits('A', 'read', 5);
    for (let i = 0; i < 5; i++) expect(await (i % 2 ? suite.one : suite.two).locks.tryLocks(['A_READ'])).toBeGreaterThan(0);
    expect(await suite.one.locks.tryLocks(['A_READ'])).toBe(0);
    expect(await suite.two.locks.tryLocks(['A_READ'])).toBe(0);
  });

  it('a name without a row uses the module defaults', async () => {
    const generous = await createLockApp(suite.db.url, { appId: 'generous', defaultPermits: { read: 2, write: 2 } });
    try {
      expect(generous.locks.getLockPermits('fresh')).toEqual({ read: 2, write: 2 });
      expect(suite.one.locks.getLockPermits('fresh')).toEqual({ read: 1, write: 1 });
      expect(await generous.locks.tryLocks(['fresh_READ'])).toBeGreaterThan(0);
      expect(await generous.locks.tryLocks(['fresh_READ'])).toBeGreaterThan(0);
      expect(await generous.locks.tryLocks(['fresh_READ'])).toBe(0);
    } finally {
      await generous.close();
    }
  });

  it('permits changed in the table with plain SQL: grants obey at once, the cache after a refresh', async () => {
    await suite.db.query(`INSERT INTO locking_permissions VALUES ('A', 'R', 3)`);
    await suite.one.locks.refreshLockPermits();
    expect(suite.one.locks.getLockPermits('A')).toEqual({ read: 3, write: 1 });
    expect(await suite.one.locks.tryLocks(['A_READ'])).toBeGreaterThan(0);

    await suite.db.query(`UPDATE locking_permissions SET permits = 1 WHERE lock_name = 'A'`);
    // The cache is stale (3), yet no grant may exceed the committed permits (1).
    expect(suite.one.locks.getLockPermits('A').read).toBe(3);
    expect(await suite.two.locks.tryLocks(['A_READ'])).toBe(0);
    await suite.one.locks.refreshLockPermits();
    expect(suite.one.locks.getLockPermits('A').read).toBe(1);

    await suite.db.query(`UPDATE locking_permissions SET permits = 2 WHERE lock_name = 'A'`);
    expect(await suite.two.locks.tryLocks(['A_READ'])).toBeGreaterThan(0);
  });

  it('setLockPermits(…, null) deletes the row and restores the defaults', async () => {
    await suite.one.locks.setLockPermits('A', 'write', 4);
    expect(suite.one.locks.getLockPermits('A')).toEqual({ read: 1, write: 4 });
    await suite.one.locks.setLockPermits('A', 'write', null);
    expect(suite.one.locks.getLockPermits('A')).toEqual({ read: 1, write: 1 });
    expect(await suite.db.query(`SELECT * FROM locking_permissions`)).toEqual([]);
  });

  it('the database refuses a permits row below 1', async () => {
    await expect(suite.db.query(`INSERT INTO locking_permissions VALUES ('A', 'W', 0)`)).rejects.toThrow(/permits_ck/);
    await expect(suite.db.query(`INSERT INTO locking_permissions VALUES ('A', 'X', 1)`)).rejects.toThrow(/mode_ck/);
  });

  it('the scheduled refresh picks up a change without a call', async () => {
    const fast = await createLockApp(suite.db.url, { appId: 'fast', permitsRefreshIntervalMs: 100 });
    try {
      expect(fast.locks.getLockPermits('B')).toEqual({ read: 1, write: 1 });
      await suite.db.query(`INSERT INTO locking_permissions VALUES ('B', 'W', 7)`);
      const deadline = Date.now() + 5000;
      while (fast.locks.getLockPermits('B').write !== 7 && Date.now() < deadline) await sleep(50);
      expect(fast.locks.getLockPermits('B')).toEqual({ read: 1, write: 7 });
    } finally {
      await fast.close();
    }
  });
});
