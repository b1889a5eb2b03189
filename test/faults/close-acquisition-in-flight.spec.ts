import { setTimeout as sleep } from 'node:timers/promises';
import { LockShutdownError } from 'nestjs-db-locks';
import { startAnswerProxy, type AnswerProxy } from '../support/answer-proxy.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/**
 * How long a close() that does not wait for the acquisition would need to run to its end, or to cut the connection
 * the answer is on (a few milliseconds here): one that waits is still waiting after it.
 */
const CLOSE_RUNS_MS = 1000;

for (const dialect of DIALECTS) {
  dialect.describe(`app.close() while an acquireLocks is in flight, nothing else held, ${dialect.name}`, () => {
    let db: TestDatabase;
    let proxy: AnswerProxy;
    let app: LockApp | undefined;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      proxy = await startAnswerProxy(db.url);
    });
    afterAll(async () => {
      await app?.close().catch(() => undefined);
      await proxy?.close();
      await db?.drop();
    });

    it('waits for the answer: the caller gets a handle told of the shutdown, and nothing is left after close', async () => {
      app = await createLockApp(proxy.via(db.url), { appId: 'closing', shutdownGraceMs: 5000 });
      const locks = app.locks;
      // The acquisition reaches the server and is granted there; its answer is held back until close() has begun.
      const held = proxy.hold('locking_try_acquire');
      const pending = locks.acquireLocks(['DEPLOY_WRITE']);
      const answer = await held;
      await until(async () => (await lockRows(db)).length === 1); // granted in the database

      const events: string[] = [];
      const closing = app.close().then(
        () => void events.push('close resolved'),
        (error: unknown) => void events.push(`close failed: ${String(error)}`),
      );
      const first = await Promise.race([
        closing.then(() => 'close ended'),
        answer.clientClosed.then(() => 'its connection cut'),
        sleep(CLOSE_RUNS_MS).then(() => 'close waits'),
      ]);
      expect(first).toBe('close waits');

      answer.release();
      const handle = await pending;
      events.push('caller got its handle');
      expect(handle).toBeDefined();
      // Told at once that the application is stopping; the grant is still held until it leaves.
      expect(handle!.signal.reason).toBeInstanceOf(LockShutdownError);
      expect(locks.isHeld(handle!.stamp)).toBe(true);
      await handle!.release();
      await closing;
      expect(events).toEqual(['caller got its handle', 'close resolved']);

      expect(await lockRows(db)).toEqual([]);
      const log = await db.query<{ stamp: string; status: string }>('SELECT stamp, status FROM locking_log');
      expect(log).toEqual([{ stamp: String(handle!.stamp), status: 'RELEASED' }]);
    });
  });
}
