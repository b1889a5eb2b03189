import { Injectable } from '@nestjs/common';
import { LockModuleNotInitializedError, LockNotAcquiredError, WithLocks } from 'nestjs-db-locks';
import { defer, firstValueFrom, isObservable, lastValueFrom, map, Observable, toArray } from 'rxjs';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

/** The lock rows a subscription sees, as `name:app`. */
const rowsNow = () => defer(async () => (await lockRows(db)).map((r) => `${r.lock_name}:${r.app_id}`));

/** Methods declared to return an Observable (`Observable` imported as a value: TypeScript records it). */
@Injectable()
class Streams {
  @WithLocks('TICKS_WRITE')
  ticks(): Observable<string[]> {
    return rowsNow();
  }

  @WithLocks({ locks: ['TICKS_WRITE'], onUnavailable: 'skip' })
  maybeTicks(): Observable<string[]> {
    return rowsNow();
  }
}

/** A service using the stream the way the compiler lets it: `.pipe(…)` on what the method returns. */
@Injectable()
class Dashboard {
  constructor(private readonly streams: Streams) {}

  counts(): Observable<number> {
    return this.streams.ticks().pipe(map((rows) => rows.length));
  }

  /** A locked call that subscribes to the stream inside its own grant: the subscription reuses it. */
  @WithLocks('TICKS_WRITE')
  async insideTheGrant(): Promise<string[]> {
    return lastValueFrom(this.streams.ticks());
  }
}

// Issue 38 item 2: a method declared `Observable<…>` under @WithLocks returns an Observable, not a Promise of one.
for (const dialect of DIALECTS) dialect.describe(`@WithLocks on methods declared to return an Observable on ${dialect.name}`, () => {
  let app: LockApp;
  let other: LockApp;
  let streams: Streams;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    other = await createLockApp(db.url, { appId: 'other' });
    app = await createLockApp(db.url, { appId: 'streams' }, 4, [Streams, Dashboard]);
    streams = app.app.get(Streams);
  });
  afterEach(async () => {
    expect(await lockRows(db)).toEqual([]);
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await db?.drop();
  });

  it('returns an Observable at once, holding nothing until it is subscribed', async () => {
    const ticks: unknown = streams.ticks();
    expect(ticks).not.toBeInstanceOf(Promise);
    expect(isObservable(ticks)).toBe(true);
    expect(await lockRows(db)).toEqual([]);
    expect(await lastValueFrom(ticks as Observable<string[]>)).toEqual(['TICKS:streams']); // each subscription is locked
  });

  it('lets a service pipe what the method returns', async () => {
    expect(await lastValueFrom(app.app.get(Dashboard).counts().pipe(toArray()))).toEqual([1]);
  });

  it('reuses the grant of the locked call it is subscribed in', async () => {
    expect(await app.app.get(Dashboard).insideTheGrant()).toEqual(['TICKS:streams']);
  });

  it('errors, or with skip completes empty, when a subscription cannot take the group', async () => {
    const stamp = await other.locks.tryLocks(['TICKS_WRITE']);
    try {
      await expect(firstValueFrom(streams.ticks())).rejects.toThrow(LockNotAcquiredError);
      expect(await lastValueFrom(streams.maybeTicks(), { defaultValue: 'no value' })).toBe('no value');
    } finally {
      await other.locks.releaseLocks(stamp);
    }
  });

  it('outside the application\'s life, returns an Observable that errors (never a synchronous throw)', async () => {
    await app.close();
    await other.close();
    let thrown: unknown;
    let returned: unknown;
    try {
      returned = streams.ticks();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeUndefined();
    expect(isObservable(returned)).toBe(true);
    await expect(lastValueFrom(returned as Observable<unknown>)).rejects.toThrow(LockModuleNotInitializedError);
    other = await createLockApp(db.url, { appId: 'other' });
    app = await createLockApp(db.url, { appId: 'streams' }, 4, [Streams, Dashboard]);
    streams = app.app.get(Streams);
  });
});
