import { Injectable } from '@nestjs/common';
import { LockWaitAbortedError, WithLocks } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

@Injectable()
class Reports {
  @WithLocks({ locks: ['REPORT_WRITE'], waitMs: 5000 })
  async build(): Promise<string> {
    return 'built';
  }
}

describe('waiting for locks', () => {
  let holder: LockApp;
  let waiter: LockApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    holder = await createLockApp(db.url, { appId: 'holder' });
    // A long re-check interval: anything fast below can only come from a notification.
    waiter = await createLockApp(db.url, { appId: 'waiter', waitRecheckMs: 5000 }, 4, [Reports]);
  });
  afterEach(async () => {
    expect(await db.query('SELECT * FROM locking_waiters')).toEqual([]); // no waiter row left behind
    await db.query('DELETE FROM locking');
  });
  afterAll(async () => {
    await holder.close();
    await waiter.close();
    await db.drop();
  });

  it('hands the group over as soon as it is released, well before any re-check', async () => {
    const held = await holder.locks.tryLocks(['H_WRITE']);
    const waiting = waiter.locks.tryLocks(['H_WRITE', 'OTHER_READ'], { waitMs: 10_000 });
    await sleep(200);
    const releasedAt = Date.now();
    await holder.locks.releaseLocks(held);
    const stamp = await waiting;
    const handOffMs = Date.now() - releasedAt;
    expect(stamp).toBeGreaterThan(held);
    expect(handOffMs).toBeLessThan(500);
  });

  it('returns 0 at the deadline', async () => {
    await holder.locks.tryLocks(['D_WRITE']);
    const startedAt = Date.now();
    expect(await waiter.locks.tryLocks(['D_READ'], { waitMs: 300 })).toBe(0);
    const waited = Date.now() - startedAt;
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(2000);
  });

  it('can be aborted: a typed error, nothing held, no row left', async () => {
    await holder.locks.tryLocks(['A_WRITE']);
    const controller = new AbortController();
    const waiting = waiter.locks.tryLocks(['A_WRITE'], { waitMs: 10_000, signal: controller.signal });
    await sleep(100);
    controller.abort(new Error('user gave up'));
    await expect(waiting).rejects.toThrow(LockWaitAbortedError);
    expect((await lockRows(db)).map((r) => r.app_id)).toEqual(['holder']);
    await expect(waiter.locks.tryLocks(['A_WRITE'], { signal: controller.signal })).rejects.toThrow(LockWaitAbortedError);
  });

  it('still acquires when its listening connection is killed mid-wait', async () => {
    const recheck = await createLockApp(db.url, { appId: 'resilient', waitRecheckMs: 300 });
    try {
      const held = await holder.locks.tryLocks(['K_WRITE']);
      const waiting = recheck.locks.tryLocks(['K_WRITE'], { waitMs: 10_000 });
      await sleep(200);
      const killed = await db.query<{ killed: boolean }>(
        `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
          WHERE datname = current_database() AND query = 'LISTEN nestjs_db_locks'`,
      );
      expect(killed.length).toBeGreaterThan(0);
      await holder.locks.releaseLocks(held);
      expect(await waiting).toBeGreaterThan(0);
    } finally {
      await recheck.close();
    }
  });

  it('wakes waiters when permits change', async () => {
    await holder.locks.tryLocks(['P_READ']);
    const waiting = waiter.locks.tryLocks(['P_READ'], { waitMs: 10_000 });
    await sleep(200);
    const changedAt = Date.now();
    await db.query(`INSERT INTO locking_permissions VALUES ('P', 'R', 2)`);
    expect(await waiting).toBeGreaterThan(0);
    expect(Date.now() - changedAt).toBeLessThan(500);
  });

  it('lets @WithLocks wait with waitMs', async () => {
    const held = await holder.locks.tryLocks(['REPORT_READ']);
    const building = waiter.app.get(Reports).build();
    await sleep(150);
    await holder.locks.releaseLocks(held);
    expect(await building).toBe('built');
  });

  it('does not starve a writer: 8 constant readers, the writer gets all of its 10 acquisitions', async () => {
    await holder.locks.setLockPermits('F', 'read', 8);
    let reading = true;
    let reads = 0;
    const reader = async () => {
      while (reading) {
        const stamp = await holder.locks.tryLocks(['F_READ']);
        if (stamp > 0) {
          reads++;
          await sleep(20);
          await holder.locks.releaseLocks(stamp);
        } else {
          await sleep(1);
        }
      }
    };
    const readers = Array.from({ length: 8 }, reader);
    await sleep(200); // the readers own the name now
    const waits: number[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        const startedAt = Date.now();
        const stamp = await waiter.locks.tryLocks(['F_WRITE'], { waitMs: 5000 });
        waits.push(Date.now() - startedAt);
        expect(stamp).toBeGreaterThan(0);
        await sleep(5);
        await waiter.locks.releaseLocks(stamp);
        await sleep(50); // let the readers back in between two writes
      }
    } finally {
      reading = false;
      await Promise.all(readers);
    }
    expect(reads).toBeGreaterThan(50); // the readers did read, between the writes
    expect(Math.max(...waits)).toBeLessThan(1000); // the documented bound: the longest read hold + a notification
  });
});
