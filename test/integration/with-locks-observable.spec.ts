import { Injectable } from '@nestjs/common';
import { LockNotAcquiredError, WithLocks } from 'nestjs-db-locks';
import { defer, firstValueFrom, lastValueFrom, NEVER, type Observable, throwError } from 'rxjs';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

let db: TestDatabase;

/** The lock rows seen by a subscription, as `name:app`. */
const rowsNow = () => defer(async () => (await lockRows(db)).map((r) => `${r.lock_name}:${r.app_id}`));

@Injectable()
class Feed {
  /** A cold Observable: every subscription reads the rows again. */
  @WithLocks('FEED_WRITE')
  snapshot(): Observable<string[]> {
    return rowsNow();
  }

  @WithLocks('FEED_WRITE')
  forever(): Observable<never> {
    return NEVER;
  }

  @WithLocks('FEED_WRITE')
  failing(): Observable<never> {
    return throwError(() => new RangeError('feed failed'));
  }

  @WithLocks({ locks: ['FEED_WRITE'], onUnavailable: 'skip' })
  maybe(): Observable<string[]> {
    return rowsNow();
  }
}

for (const dialect of DIALECTS) dialect.describe(`@WithLocks on methods returning an Observable on ${dialect.name}`, () => {
  let app: LockApp;
  let other: LockApp;
  let feed: Feed;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    other = await createLockApp(db.url, { appId: 'other' });
    app = await createLockApp(db.url, { appId: 'feed' }, 4, [Feed]);
    feed = app.app.get(Feed);
  });
  afterEach(async () => {
    expect(await lockRows(db)).toEqual([]);
  });
  afterAll(async () => {
    await app.close();
    await other.close();
    await db.drop();
  });

  it('holds nothing for an Observable that is never subscribed', async () => {
    const snapshot = (await feed.snapshot()) as Observable<string[]>;
    expect(await lockRows(db)).toEqual([]);
    expect(snapshot).toBeDefined();
  });

  it('takes the group for each subscription of a cold Observable', async () => {
    const snapshot = (await feed.snapshot()) as Observable<string[]>;
    expect(await lastValueFrom(snapshot)).toEqual(['FEED:feed']);
    expect(await lastValueFrom(snapshot)).toEqual(['FEED:feed']); // the second subscription is locked too
  });

  it('releases on unsubscribe', async () => {
    const subscription = ((await feed.forever()) as Observable<never>).subscribe();
    await until(async () => (await lockRows(db)).length === 1);
    subscription.unsubscribe();
    await until(async () => (await lockRows(db)).length === 0);
  });

  it('releases before forwarding an error', async () => {
    const failing = (await feed.failing()) as Observable<never>;
    await expect(lastValueFrom(failing)).rejects.toThrow(RangeError);
  });

  it('errors (or, with skip, completes empty) when a subscription cannot take the group', async () => {
    const snapshot = (await feed.snapshot()) as Observable<string[]>;
    const maybe = (await feed.maybe()) as Observable<string[]>;
    const stamp = await other.locks.tryLocks(['FEED_WRITE']);
    try {
      await expect(firstValueFrom(snapshot)).rejects.toThrow(LockNotAcquiredError);
      expect(await lastValueFrom(maybe, { defaultValue: 'no value' })).toBe('no value');
    } finally {
      await other.locks.releaseLocks(stamp);
    }
  });
});
