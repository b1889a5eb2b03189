import { Injectable } from '@nestjs/common';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockConfigurationError, LockShutdownError, WithLocks } from 'nestjs-db-locks';
import { NEVER, Observable, Subject } from 'rxjs';
import { logRowsOf } from '../support/dialect-sql.js';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import { startHolder } from '../support/holder-process.js';
import { createLockApp } from '../support/lock-app.js';
import { createLoggedLockApp } from '../support/logged-lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const DEPLOY_HOLDER = fileURLToPath(new URL('../support/deploy-holder.child.mjs', import.meta.url));

/** The values of the finite stream, pushed by the test. */
let ticks = new Subject<number>();

@Injectable()
class Streams {
  /** A finite stream: it ends when the test completes `ticks`. */
  @WithLocks('TICKS_WRITE')
  ticks(): Observable<number> {
    return ticks.asObservable();
  }

  /** A stream that never ends by itself (a server-sent event feed). */
  @WithLocks('FEED_WRITE')
  feed(): Observable<never> {
    return NEVER;
  }
}

/** An observer that records what a subscription receives in `events`. */
function recordedIn(events: string[]) {
  return {
    next: (value: number) => events.push(`next ${value}`),
    error: (error: Error) => events.push(`error ${error.name}`),
    complete: () => events.push('complete'),
  };
}

/** The statuses of the log rows of `appId`. */
async function statusesOf(db: TestDatabase, dialect: TestDialect, appId: string): Promise<string[]> {
  return (await logRowsOf(db, dialect)).filter((row) => row.app_id === appId).map((row) => row.status);
}

/** The lock rows of `appId`. */
async function rowsOf(db: TestDatabase, appId: string) {
  return (await lockRows(db)).filter((row) => row.app_id === appId);
}

// Issue 38: app.close() tells and waits for every holder, not only the locked calls returning a Promise: a live
// subscription of a locked Observable, and an acquireLocks handle in use. Each releases (or is released) while the
// database is still open: no lock row, no ACQUIRED log row left behind, and no "lost" told to a holder.
for (const dialect of DIALECTS) dialect.describe(`holders app.close() waits for, on ${dialect.name}`, () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await dialect.createDatabase();
  });
  afterAll(() => db?.drop());

  it('refuses a shutdownGraceMs that is not a whole number of milliseconds, at start-up, naming it', async () => {
    for (const shutdownGraceMs of [-1, 1.5, '10s']) {
      const started = createLockApp(db.url, { appId: 'grace-option', shutdownGraceMs: shutdownGraceMs as number });
      await expect(started).rejects.toThrow(LockConfigurationError);
      await expect(started).rejects.toThrow(/shutdownGraceMs must be an integer from 0/);
    }
  });

  it('waits for a live subscription to end by itself, which releases before close() returns', async () => {
    ticks = new Subject<number>();
    const app = await createLoggedLockApp(db.url, { appId: 'stream-ends', shutdownGraceMs: 120_000 }, 4, [Streams]);
    const events: string[] = [];
    app.app.get(Streams).ticks().subscribe(recordedIn(events));
    await until(async () => (await rowsOf(db, 'stream-ends')).length === 1);
    const closing = app.close().then(() => events.push('closed'));
    await sleep(1_000); // today's close() was through in 0.5 s: it must still wait
    expect(events).toEqual([]);
    expect(await rowsOf(db, 'stream-ends')).toHaveLength(1);
    ticks.next(1); // the stream goes on during close(), under its locks
    ticks.complete();
    await closing;
    expect(events).toEqual(['next 1', 'complete', 'closed']);
    expect(await rowsOf(db, 'stream-ends')).toEqual([]);
    expect(await statusesOf(db, dialect, 'stream-ends')).toEqual(['RELEASED']);
    expect(app.log.lines.filter((line) => line.level !== 'log')).toEqual([]);
  });

  it('ends a subscription still live when shutdownGraceMs is over: released first, then LockShutdownError', async () => {
    const app = await createLoggedLockApp(db.url, { appId: 'stream-cut', shutdownGraceMs: 500 }, 4, [Streams]);
    let stamp = 0;
    let heldWhenTold: boolean | undefined;
    const outcome = new Promise<unknown>((resolve) => {
      app.app.get(Streams).feed().subscribe({
        error: (error: unknown) => {
          heldWhenTold = app.locks.isHeld(stamp);
          resolve(error);
        },
        complete: () => resolve('completed'),
      });
    });
    await until(async () => (await rowsOf(db, 'stream-cut')).length === 1);
    stamp = Number((await rowsOf(db, 'stream-cut'))[0]!.stamp);
    // Other sessions see the row as soon as it commits, a moment before the holder's driver hears the COMMIT's
    // answer: the subscription holds its locks once this process knows it (CI once looked in between, on MariaDB).
    await until(() => app.locks.isHeld(stamp));
    await app.close();
    expect(await outcome).toBeInstanceOf(LockShutdownError);
    expect(heldWhenTold).toBe(false); // released before the subscriber was told
    expect(await statusesOf(db, dialect, 'stream-cut')).toEqual(['RELEASED']);
    expect(app.log.lines.filter((line) => line.level !== 'log')).toEqual([
      {
        level: 'warn',
        message:
          'A subscription of Streams.feed still held its locks when shutdownGraceMs (500 ms) ended: the shutdown ended ' +
          'it and released them',
      },
    ]);
  });

  it('tells an acquireLocks handle in use that the application stops, and waits for its release', async () => {
    const app = await createLoggedLockApp(db.url, { appId: 'handle-ends', shutdownGraceMs: 120_000 });
    const events: string[] = [];
    let told: { reason: unknown; held: boolean; rows: number } | undefined;
    const block = (async () => {
      await using grant = await app.locks.acquireLocks(['USING_WRITE']);
      events.push('held');
      await new Promise((resolve) => grant!.signal.addEventListener('abort', resolve, { once: true }));
      events.push('told');
      told = { reason: grant!.signal.reason, held: app.locks.isHeld(grant!.stamp), rows: (await rowsOf(db, 'handle-ends')).length };
      await sleep(1_000); // the last of the work: close() waits for it
      events.push('finished');
    })().then(() => events.push('released'));
    await until(() => events.includes('held'));
    await app.close().then(() => events.push('closed'));
    await block;
    expect(events).toEqual(['held', 'told', 'finished', 'released', 'closed']);
    expect(told?.reason).toBeInstanceOf(LockShutdownError);
    expect(told).toMatchObject({ held: true, rows: 1 }); // told while it still held its locks
    expect(await rowsOf(db, 'handle-ends')).toEqual([]);
    expect(await statusesOf(db, dialect, 'handle-ends')).toEqual(['RELEASED']);
    expect(app.log.lines.filter((line) => line.level !== 'log')).toEqual([]);
  });

  it('releases a handle still in use when shutdownGraceMs is over; its own release then resolves', async () => {
    const app = await createLoggedLockApp(db.url, { appId: 'handle-cut', shutdownGraceMs: 300 });
    const grant = (await app.locks.acquireLocks(['KEPT_WRITE']))!;
    await app.close();
    expect(grant.signal.reason).toBeInstanceOf(LockShutdownError);
    expect(app.locks.isHeld(grant.stamp)).toBe(false);
    expect(await rowsOf(db, 'handle-cut')).toEqual([]);
    expect(await statusesOf(db, dialect, 'handle-cut')).toEqual(['RELEASED']);
    await expect(grant.release()).resolves.toBeUndefined();
    await expect(grant[Symbol.asyncDispose]()).resolves.toBeUndefined(); // the end of its `await using` block
    expect(app.log.lines.filter((line) => line.level !== 'log')).toEqual([
      {
        level: 'warn',
        message:
          `The acquireLocks handle of stamp ${grant.stamp} still held its locks when shutdownGraceMs (300 ms) ended: ` +
          'the shutdown ended it and released them',
      },
    ]);
  });

  it('waits for a subscription and a handle whose groups are granted just as close() begins', async () => {
    ticks = new Subject<number>();
    const app = await createLoggedLockApp(db.url, { appId: 'granted-late', shutdownGraceMs: 120_000 }, 4, [Streams]);
    const events: string[] = [];
    // Both acquisitions are sent before close() begins (it refuses later ones) and land during it.
    app.app.get(Streams).ticks().subscribe(recordedIn(events));
    const acquiring = app.locks.acquireLocks(['LATE_WRITE']);
    const closing = app.close().then(() => events.push('closed'));
    const block = (async () => {
      await using grant = await acquiring;
      // Granted after close() began: its signal has fired already.
      if (!grant!.signal.aborted) await new Promise((resolve) => grant!.signal.addEventListener('abort', resolve, { once: true }));
      events.push(`told ${(grant!.signal.reason as Error).name} ${app.locks.isHeld(grant!.stamp)}`);
    })().then(() => events.push('released'));
    await block;
    await until(async () => (await rowsOf(db, 'granted-late')).length === 1); // the subscription's
    await sleep(500);
    expect(events).toEqual(['told LockShutdownError true', 'released']); // close() still waits for the subscription
    ticks.next(1);
    ticks.complete();
    await closing;
    expect(events).toEqual(['told LockShutdownError true', 'released', 'next 1', 'complete', 'closed']);
    expect(await rowsOf(db, 'granted-late')).toEqual([]);
    expect(await statusesOf(db, dialect, 'granted-late')).toEqual(['RELEASED', 'RELEASED']);
    expect(app.log.lines.filter((line) => line.level !== 'log')).toEqual([]);
  });

  describe('a rolling deploy: SIGTERM to a replica with enableShutdownHooks()', () => {
    /** Starts the replica, waits until it holds its lock, sends SIGTERM; resolves with all it reported once it exited. */
    async function deploy(env: Record<string, string>) {
      const replica = startHolder({ DATABASE_URL: db.url, ...env }, DEPLOY_HOLDER);
      const reported: Array<Record<string, unknown>> = [];
      createInterface({ input: replica.child.stdout! }).on('line', (line) => reported.push(JSON.parse(line) as Record<string, unknown>));
      const exited = new Promise<string | null>((resolve) => replica.child.once('exit', (_code, signal) => resolve(signal)));
      const held = await replica.next('held');
      expect(await rowsOf(db, env.APP_ID!)).toHaveLength(1);
      replica.child.kill('SIGTERM');
      const exitSignal = await exited;
      return { stamp: Number(held.stamp), after: reported.filter((event) => event.event !== 'held'), exitSignal };
    }

    it('the handle is told, finishes and releases; then the application shuts down', async () => {
      const { after, exitSignal } = await deploy({ APP_ID: 'deploy-finish', MODE: 'finish', FINISH_MS: '1000' });
      expect(after).toEqual([
        { event: 'told', reason: 'LockShutdownError', held: true },
        { event: 'finished', held: true },
        { event: 'released' },
        { event: 'shutdown', lateRelease: 'resolved' }, // the application's own hook: after the library's shutdown
      ]);
      expect(exitSignal).toBe('SIGTERM');
      expect(await rowsOf(db, 'deploy-finish')).toEqual([]);
      expect(await statusesOf(db, dialect, 'deploy-finish')).toEqual(['RELEASED']);
    }, 60_000);

    it('a handle that never ends is released when shutdownGraceMs is over, with one warning', async () => {
      const { stamp, after, exitSignal } = await deploy({ APP_ID: 'deploy-ignore', MODE: 'ignore', GRACE_MS: '1000' });
      expect(after).toEqual([
        { event: 'told', reason: 'LockShutdownError', held: true },
        {
          event: 'log',
          level: 'warn',
          message:
            `The acquireLocks handle of stamp ${stamp} still held its locks when shutdownGraceMs (1000 ms) ended: the ` +
            'shutdown ended it and released them',
        },
        { event: 'shutdown', lateRelease: 'resolved' },
      ]);
      expect(exitSignal).toBe('SIGTERM');
      expect(await rowsOf(db, 'deploy-ignore')).toEqual([]);
      expect(await statusesOf(db, dialect, 'deploy-ignore')).toEqual(['RELEASED']);
    }, 60_000);
  });
});
