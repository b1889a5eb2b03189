import { Injectable } from '@nestjs/common';
import { LockNotAcquiredError, LockService, WithLocks } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

let db: TestDatabase;

/** A promise the test settles by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** What a nested call saw while it ran. */
interface Seen {
  readonly ranWithRows: string[];
}

@Injectable()
class Ledger {
  /** The outcome of the work each parent left behind. */
  background?: Promise<Seen | unknown>;
  currentLockLater?: Promise<number | undefined>;
  /** Set when `postAndForget`'s body has returned. */
  forgotten = false;

  constructor(private readonly locks: LockService) {}

  @WithLocks('LEDGER_WRITE')
  async post(): Promise<Seen> {
    return { ranWithRows: (await lockRows(db)).map((r) => `${r.lock_name}:${r.app_id}`) };
  }

  /** Leaves work behind that starts only when `later` opens, after this method has settled. */
  @WithLocks('LEDGER_WRITE')
  async postLater(later: Promise<void>): Promise<number | undefined> {
    this.background = later.then(() => this.post()).catch((error: unknown) => error);
    this.currentLockLater = later.then(() => this.locks.currentLock()?.stamp);
    return this.locks.currentLock()?.stamp;
  }

  /** Starts a nested call it does not await; that call waits for `inside` while it holds the reused grant. */
  @WithLocks('LEDGER_WRITE')
  async postAndForget(inside: Promise<void>): Promise<void> {
    this.background = this.postAfter(inside);
    this.forgotten = true;
  }

  @WithLocks('LEDGER_WRITE')
  async postAfter(inside: Promise<void>): Promise<Seen> {
    await inside;
    return this.post();
  }

  /** Holds the lock until `resume` opens, then calls a nested method. */
  @WithLocks('LEDGER_WRITE')
  async postAfterPause(resume: Promise<void>): Promise<Seen> {
    await resume;
    return this.post();
  }
}

for (const dialect of DIALECTS) dialect.describe(`@WithLocks re-entrancy is bounded by the grant it reuses on ${dialect.name}`, () => {
  let app: LockApp;
  let other: LockApp;
  let ledger: Ledger;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    other = await createLockApp(db.url, { appId: 'other' });
    app = await createLockApp(db.url, { appId: 'ledger' }, 4, [Ledger]);
    ledger = app.app.get(Ledger);
  });
  afterEach(async () => {
    await db.query('DELETE FROM locking');
  });
  afterAll(async () => {
    await app.close();
    await other.close();
    await db.drop();
  });

  it('work left behind by a method acquires for itself once the method has released', async () => {
    const later = gate();
    const parentStamp = await ledger.postLater(later.promise);
    expect(parentStamp).toBeGreaterThan(0);
    const foreign = await other.locks.tryLocks(['LEDGER_WRITE']);
    expect(foreign).toBeGreaterThan(0); // the parent did release
    later.open();
    expect(await ledger.currentLockLater).toBeUndefined(); // never the released stamp
    expect(await ledger.background).toBeInstanceOf(LockNotAcquiredError); // not "already held": held by `other`
    await other.locks.releaseLocks(foreign);
    expect(await ledger.postLater(Promise.resolve())).toBeGreaterThan(0);
    expect(await ledger.background).toEqual({ ranWithRows: ['LEDGER:ledger'] }); // its own grant this time
  });

  it('a nested call started inside the method keeps the grant it reuses until it settles', async () => {
    const inside = gate();
    let parentSettled = false;
    const parent = ledger.postAndForget(inside.promise).then(() => (parentSettled = true));
    await until(() => ledger.forgotten); // the method's body has returned
    expect(await other.locks.tryLocks(['LEDGER_WRITE'])).toBe(0); // still held for the nested call
    expect(parentSettled).toBe(false);
    inside.open();
    await parent;
    expect(await ledger.background).toEqual({ ranWithRows: ['LEDGER:ledger'] }); // ran under the grant
    expect(await lockRows(db)).toEqual([]);
  });

  it('a nested call after the grant was lost acquires for itself', async () => {
    const resume = gate();
    const parent = ledger.postAfterPause(resume.promise).catch((error: unknown) => error);
    await until(async () => (await lockRows(db)).length === 1);
    await app.locks.releaseAllLocks(); // the grant is lost (as after a reap)
    const foreign = await other.locks.tryLocks(['LEDGER_WRITE']);
    expect(foreign).toBeGreaterThan(0);
    resume.open();
    expect(await parent).toBeInstanceOf(LockNotAcquiredError);
    await other.locks.releaseLocks(foreign);
  });
});
