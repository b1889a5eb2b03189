import { setTimeout as sleep } from 'node:timers/promises';
import { LockLostError, type LockSpec } from 'nestjs-db-locks';
import { startAnswerProxy, type AnswerProxy } from '../support/answer-proxy.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** The holder's lease, renewed every 0.5 s. */
const LEASE = { leaseMs: 4000, renewIntervalMs: 500, queryTimeoutMs: 8000 };
/**
 * How long the network holds the answer back: well within what is left of the lease when it is sent (3.5 s), so that
 * the grant is still held when the answer comes; a holder that counted its lease from the answer would believe it
 * 1.5 s past the database's lease.
 */
const DELAY_MS = 1500;

for (const dialect of DIALECTS) {
  const mysql = dialect.name === 'MariaDB';
  dialect.describe(`The holder is told first when an answer comes late, ${dialect.name}`, () => {
    let db: TestDatabase;
    let proxy: AnswerProxy;
    let rival: LockApp;
    let holder: LockApp | undefined;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      proxy = await startAnswerProxy(db.url);
      rival = await createLockApp(db.url, { appId: 'rival', reaperIntervalMs: 100 });
    });
    afterEach(async () => {
      proxy.heal();
      await holder?.close();
      holder = undefined;
    });
    afterAll(async () => {
      await rival?.close();
      await proxy?.close();
      await db?.drop();
    });

    /**
     * Waits until the rival is granted `lock` (once the holder's lease is over in the database and reaped), and reads
     * at that instant whether the holder still believes it holds `stamp`.
     */
    async function holderBeliefWhenRivalGranted(lock: LockSpec, stamp: number): Promise<boolean> {
      let believed: boolean | undefined;
      await until(async () => {
        const granted = await rival.locks.tryLocks([lock]);
        if (granted > 0) believed = holder!.locks.isHeld(stamp);
        return granted > 0;
      });
      return believed!;
    }

    it('a renewal answered late: its lease counts from the request, the holder told before the rival is granted', async () => {
      holder = await createLockApp(proxy.via(db.url), { appId: 'holder-renewal', ...LEASE });
      const stamp = await holder.locks.tryLocks(['RENEWED_WRITE']);
      // A renewal reaches the server; its answer is held back, and nothing else passes any more (no later renewal).
      const held = await proxy.hold(mysql ? 'lease_expires = IF(' : 'nestjs_db_locks_renew', {
        atCommit: mysql,
        then: 'partition',
      });
      await sleep(DELAY_MS);
      expect(holder.locks.isHeld(stamp)).toBe(true);
      held.release();

      expect(await holderBeliefWhenRivalGranted('RENEWED_WRITE', stamp)).toBe(false);
      expect(holder.locks.getSignal(stamp).reason).toBeInstanceOf(LockLostError);
    });

    it('an acquisition answered late: its lease counts from the request, the holder told before the rival is granted', async () => {
      holder = await createLockApp(proxy.via(db.url), { appId: 'holder-acquisition', ...LEASE });
      // The acquisition reaches the server; its answer is held back, and nothing else passes any more (no renewal).
      const held = proxy.hold('locking_try_acquire', { then: 'partition' });
      const acquiring = holder.locks.tryLocks(['ACQUIRED_WRITE']);
      const answer = await held;
      await sleep(DELAY_MS);
      answer.release();
      const stamp = await acquiring;
      expect(stamp).toBeGreaterThan(0);
      expect(holder.locks.isHeld(stamp)).toBe(true);

      expect(await holderBeliefWhenRivalGranted('ACQUIRED_WRITE', stamp)).toBe(false);
      expect(holder.locks.getSignal(stamp).reason).toBeInstanceOf(LockLostError);
    });
  });
}
