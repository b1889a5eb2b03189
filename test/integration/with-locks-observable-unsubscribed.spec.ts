import { Injectable } from '@nestjs/common';
import { WithLocks } from 'nestjs-db-locks';
import { Observable } from 'rxjs';
import { startAnswerProxy, type AnswerProxy } from '../support/answer-proxy.js';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

@Injectable()
class Feed {
  /** Subscriptions of the source: made only once the group is held. */
  subscribed = 0;

  @WithLocks('FEED_WRITE')
  forever(): Observable<never> {
    return new Observable<never>(() => void this.subscribed++);
  }
}

for (const dialect of DIALECTS) {
  dialect.describe(`A locked Observable unsubscribed before its group is granted, ${dialect.name}`, () => {
    let db: TestDatabase;
    let proxy: AnswerProxy;
    let app: LockApp;
    let feed: Feed;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      proxy = await startAnswerProxy(db.url);
      app = await createLockApp(proxy.via(db.url), { appId: 'feed' }, 4, [Feed]);
      feed = app.app.get(Feed);
    });
    afterAll(async () => {
      await app?.close();
      await proxy?.close();
      await db?.drop();
    });

    it('releases the group granted after the unsubscribe, and never subscribes the source', async () => {
      // The acquisition reaches the server and is granted there; its answer is held back until after the unsubscribe.
      const held = proxy.hold('locking_try_acquire');
      const errors: unknown[] = [];
      const subscription = feed.forever().subscribe({ error: (error: unknown) => errors.push(error) });
      const answer = await held;
      await until(async () => (await lockRows(db)).length === 1); // granted in the database
      subscription.unsubscribe();
      answer.release();

      await until(async () => (await lockRows(db)).length === 0, 3000);
      expect(feed.subscribed).toBe(0);
      expect(errors).toEqual([]);
      const log = await db.query<{ status: string }>('SELECT status FROM locking_log');
      expect(log.map((row) => row.status)).toEqual(['RELEASED']);
    });
  });
}
