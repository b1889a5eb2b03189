import { IllegalMonitorStateError, LockAdminService } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

class BlockFailed extends Error {}

for (const dialect of DIALECTS) dialect.describe(`await using a grant on ${dialect.name}`, () => {
  let db: TestDatabase;
  let holder: LockApp;
  let other: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    holder = await createLockApp(db.url, { appId: 'using-holder' });
    other = await createLockApp(db.url, { appId: 'using-other' });
  });
  afterAll(async () => {
    await holder.close();
    await other.close();
    await db.drop();
  });
  afterEach(async () => {
    expect(await lockRows(db)).toEqual([]);
  });

  /** Whether `other` could take `name` for write now (released at once if it could). */
  async function freeForOthers(name: string): Promise<boolean> {
    const stamp = await other.locks.tryLocks([{ name, mode: 'write' }]);
    if (stamp > 0) await other.locks.releaseLocks(stamp);
    return stamp > 0;
  }

  it('holds the group inside the block and releases it at the end', async () => {
    let inside: number | undefined;
    {
      await using grant = await holder.locks.acquireLocks(['ORDERS_WRITE']);
      inside = grant?.stamp;
      expect(grant?.signal.aborted).toBe(false);
      expect(holder.locks.isHeld(inside!)).toBe(true);
      expect(await freeForOthers('ORDERS')).toBe(false);
    }
    expect(holder.locks.isHeld(inside!)).toBe(false);
    expect(await freeForOthers('ORDERS')).toBe(true);
  });

  it('releases it when the block throws, and the block\'s own error comes out unchanged', async () => {
    const failure = new BlockFailed('rebuild failed');
    const thrown = await (async () => {
      await using grant = await holder.locks.acquireLocks([{ name: 'user:ana@example.com', mode: 'write' }]);
      expect(grant).toBeDefined();
      throw failure;
    })().catch((e: unknown) => e);
    expect(thrown).toBe(failure);
    expect(await freeForOthers('user:ana@example.com')).toBe(true);
  });

  it('gives undefined when the group is busy: the block runs, nothing is released', async () => {
    const held = await other.locks.tryLocks(['BUSY_WRITE']);
    {
      await using grant = await holder.locks.acquireLocks(['BUSY_WRITE'], { waitMs: 50 });
      expect(grant).toBeUndefined();
    }
    expect(other.locks.isHeld(held)).toBe(true);
    await other.locks.releaseLocks(held);
  });

  it('releases once: an explicit release() before the end of the block is enough', async () => {
    await (async () => {
      await using grant = await holder.locks.acquireLocks(['TWICE_WRITE']);
      await grant!.release();
      expect(await freeForOthers('TWICE')).toBe(true);
    })(); // the end of the block does not release again (which would throw IllegalMonitorStateError)
  });

  it('reports a grant lost during the block at its end (IllegalMonitorStateError), beside the block\'s own error', async () => {
    const admin = holder.app.get(LockAdminService);
    const lostAtEnd = await (async () => {
      await using grant = await holder.locks.acquireLocks(['FORCED_WRITE']);
      await admin.forceRelease(grant!.stamp, 'ticket OPS-7');
    })().catch((e: unknown) => e);
    expect(lostAtEnd).toBeInstanceOf(IllegalMonitorStateError);

    const failure = new BlockFailed('the work failed too');
    const both = await (async () => {
      await using grant = await holder.locks.acquireLocks(['FORCED_WRITE']);
      await admin.forceRelease(grant!.stamp, 'ticket OPS-8');
      throw failure;
    })().catch((e: unknown) => e);
    // The language's rule: the disposal's error, with the block's error as `suppressed`.
    expect(both).toMatchObject({ name: 'SuppressedError', suppressed: failure });
    expect((both as { error: unknown }).error).toBeInstanceOf(IllegalMonitorStateError);
  });
});
