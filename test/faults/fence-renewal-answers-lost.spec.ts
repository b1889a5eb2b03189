import { LockFence, LockLostError } from 'nestjs-db-locks';
import { type BusinessPool, businessPool } from '../data-layers/business-pool.js';
import { startAnswerProxy, type AnswerProxy } from '../support/answer-proxy.js';
import { logRowsOf } from '../support/dialect-sql.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/**
 * A renewal every 1.5 s for a lease of 3 s: once a renewal reaches the server and its answer (and every answer after
 * it) is lost, the holder's own lease ends 1.5 s later (counted from the renewal before), while the database's runs
 * for 1.5 s more.
 */
const LEASE = { leaseMs: 3000, renewIntervalMs: 1500, queryTimeoutMs: 8_000 };

for (const dialect of DIALECTS) {
  const mysql = dialect.name === 'MariaDB';
  dialect.describe(`fenceAndCommit once the renewal answers are lost, ${dialect.name}`, () => {
    let db: TestDatabase;
    let proxy: AnswerProxy;
    let app: LockApp;
    let business: BusinessPool;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await db.query('CREATE TABLE ledger (entry integer NOT NULL)');
      proxy = await startAnswerProxy(db.url);
      // The library's connections go through the proxy; the business transactions go direct.
      app = await createLockApp(proxy.via(db.url), { appId: 'holder', ...LEASE });
      business = businessPool(dialect, db.url);
    });
    afterAll(async () => {
      proxy?.heal();
      await business?.close();
      await app?.close();
      await proxy?.close();
      await db?.drop();
    });

    it('refuses the commit with LockLostError once the lease ran out on its own clock, the database lease still live', async () => {
      const { locks } = app;
      const fence = app.app.get(LockFence);
      const stamp = await locks.tryLocks(['LEDGER_WRITE']);
      const lost = new Promise<void>((resolve) => locks.getSignal(stamp).addEventListener('abort', () => resolve()));
      const version = async () => (await logRowsOf(db, dialect)).find((row) => row.stamp === String(stamp))!.version;
      // A renewal answered since the grant: the next one comes a full renewal period after it.
      const granted = await version();
      await until(async () => (await version()) > granted);
      // That next renewal reaches the server (its lease extended there); no answer reaches the library any more.
      await proxy.hold(mysql ? 'lease_expires = IF(' : 'nestjs_db_locks_renew', { atCommit: mysql, then: 'mute' });

      await lost;
      expect(locks.isHeld(stamp)).toBe(false);
      const tx = await business.begin();
      try {
        // The database still sees the grant live: only the holder's own clock says it is over.
        const [row] = (await logRowsOf(db, dialect)).filter((r) => r.stamp === String(stamp));
        expect(row).toMatchObject({ status: 'ACQUIRED' });
        expect(row!.lease_left_ms).toBeGreaterThan(200);
        await tx.run('INSERT INTO ledger (entry) VALUES (1)');
        const failure = await fence.fenceAndCommit(tx.connection, stamp).then(
          () => 'committed',
          (error: unknown) => error,
        );
        expect(failure).toBeInstanceOf(LockLostError);
        expect((failure as LockLostError).stamp).toBe(stamp);
      } finally {
        await tx.end();
      }
      expect(await db.query('SELECT entry FROM ledger')).toEqual([]);
      // Not fenced: the log still says ACQUIRED, never BUSINESS_DONE.
      expect((await logRowsOf(db, dialect)).map((r) => r.status)).toEqual(['ACQUIRED']);
    });
  });
}
