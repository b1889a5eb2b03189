import { Injectable, Logger, type LoggerService } from '@nestjs/common';
import { IllegalMonitorStateError, LockAdminService, LockLostError, LockService, WithLocks } from 'nestjs-db-locks';
import { DataSource } from 'typeorm';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

@Injectable()
class Rebuild {
  constructor(private readonly locks: LockService) {}

  stamp = 0;

  /** Runs until its grant is lost. */
  @WithLocks('REBUILD_WRITE')
  async run(): Promise<string> {
    const grant = this.locks.currentLock()!;
    this.stamp = grant.stamp;
    await new Promise((resolve) => grant.signal.addEventListener('abort', resolve, { once: true }));
    return 'noticed';
  }
}

for (const dialect of DIALECTS) dialect.describe(`messages that say what happened on ${dialect.name}`, () => {
  let db: TestDatabase;
  let app: LockApp;
  let admin: LockAdminService;
  let forcer: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    app = await createLockApp(db.url, { appId: 'messages', leaseMs: 3000, renewIntervalMs: 100 }, 4, [Rebuild]);
    forcer = await createLockApp(db.url, { appId: 'forcer', instance: 'forcer-1' });
    admin = forcer.app.get(LockAdminService);
  });
  afterAll(async () => {
    await app.close();
    await forcer.close();
    await db.drop();
  });

  it('a lock lost during a locked call is one event, one ERROR line that says it was forced, by whom and why', async () => {
    const errors: string[] = [];
    const capture: LoggerService = { log() {}, warn() {}, error: (message: string) => errors.push(String(message)) };
    const rebuild = app.app.get(Rebuild);
    Logger.overrideLogger(capture);
    try {
      const running = rebuild.run();
      await until(async () => rebuild.stamp > 0);
      await admin.forceRelease(rebuild.stamp, 'stuck since 03:00');
      // The caller learns that its call ran without the lock from some point on (as before); the log says it once.
      await expect(running).rejects.toBeInstanceOf(IllegalMonitorStateError);
      await until(async () => (await lockRows(db)).length === 0);
      await new Promise((resolve) => setTimeout(resolve, 300)); // a second line would come with the release, now done
    } finally {
      Logger.overrideLogger(false);
    }
    expect(errors).toEqual([`Locks of stamp ${rebuild.stamp} lost: its release was forced by forcer-1: stuck since 03:00`]);
  });

  it('a release or business done that finds the grant gone names the cause from the lock log (issue 38)', async () => {
    const gone = (stamp: number, why: string) => `No locks held by app "messages" under stamp ${stamp}: ${why}`;
    const forced = await app.locks.tryLocks(['WHY_WRITE']);
    await admin.forceRelease(forced, 'deploy cleanup');
    const byForcer = 'its release was forced by forcer-1: deploy cleanup';
    // Released again after the forced release (as often as asked): forced, by whom and why, not "already released".
    for (let i = 0; i < 2; i++) {
      const error = await app.locks.releaseLocks(forced).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IllegalMonitorStateError);
      expect(error).toMatchObject({ message: gone(forced, byForcer), reason: byForcer, stamp: forced });
    }
    // Business done after it: the LockLostError (the HTTP 409's message) names the forced release too.
    const dataSource = app.app.get(DataSource);
    const lost = await dataSource.transaction((manager) => app.locks.markBusinessDone(forced, manager)).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LockLostError);
    expect(lost).toMatchObject({ reason: byForcer, message: `The locks of stamp ${forced} are lost: ${byForcer}` });

    const released = await app.locks.tryLocks(['WHY_WRITE']);
    await app.locks.releaseLocks(released);
    await expect(app.locks.releaseLocks(released)).rejects.toThrow(gone(released, 'it was already released'));
    const notReleased = await dataSource.transaction((manager) => app.locks.markBusinessDone(released, manager)).catch((e: unknown) => e);
    expect(notReleased).toMatchObject({ reason: 'it was already released' });

    const foreign = await forcer.locks.tryLocks(['WHY_OTHER_WRITE']);
    await expect(app.locks.releaseLocks(foreign)).rejects.toThrow(gone(foreign, 'it is a grant of app "forcer", not of this one'));
    await forcer.locks.releaseLocks(foreign);
    await expect(app.locks.releaseLocks(foreign + 1000)).rejects.toThrow(
      gone(foreign + 1000, 'no grant has this stamp in the lock log (unknown, or its log row was pruned)'),
    );
  });
});
