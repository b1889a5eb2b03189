import { Injectable, Logger, type LoggerService } from '@nestjs/common';
import { IllegalMonitorStateError, LockAdminService, LockService, WithLocks } from 'nestjs-db-locks';
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
});
