import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LockSpec } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { startHolder } from '../support/holder-process.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

const LEASE_MS = 1500;
const REAPER_MS = 500;

for (const dialect of DIALECTS) dialect.describe(`crashes with real child processes on ${dialect.name}`, () => {
  let db: TestDatabase;
  let watcher: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    await db.query('CREATE TABLE business (writer text NOT NULL, stamp bigint NOT NULL)');
    // Another instance of the fleet: it runs the reaper and takes over freed locks.
    watcher = await createLockApp(db.url, { appId: 'watcher', reaperIntervalMs: REAPER_MS });
  });
  afterAll(async () => {
    await watcher.close();
    await db.drop();
  });

  /**
   * Freezes the holder (SIGSTOP), waits until the watcher takes `spec` (its lease ended and the reaper freed it),
   * writes the watcher's business row under it, releases it, and thaws the holder. Returns the watcher's stamp.
   */
  async function takeOverWhileFrozen(child: ChildProcess, spec: LockSpec): Promise<number> {
    child.kill('SIGSTOP');
    try {
      let taken = 0;
      const deadline = Date.now() + LEASE_MS + REAPER_MS + 3000;
      while (taken === 0 && Date.now() < deadline) {
        taken = await watcher.locks.tryLocks([spec]);
        if (taken === 0) await sleep(50);
      }
      expect(taken).toBeGreaterThan(0);
      await db.query(`INSERT INTO business (writer, stamp) VALUES ('watcher', $1)`, [taken]);
      await watcher.locks.releaseLocks(taken);
      return taken;
    } finally {
      child.kill('SIGCONT');
    }
  }

  async function statusOf(stamp: unknown): Promise<string | undefined> {
    const rows = await db.query<{ status: string }>('SELECT status FROM locking_log WHERE stamp = $1', [stamp]);
    return rows[0]?.status;
  }

  it('frees the locks of a holder killed with SIGKILL and never restarted, within lease + reaper interval + 1 s', async () => {
    const holder = startHolder({ DATABASE_URL: db.url, APP_ID: 'killed', LOCKS: 'K_WRITE', LEASE_MS: String(LEASE_MS) });
    const { stamp } = await holder.next('held');
    expect(await watcher.locks.tryLocks(['K_WRITE'])).toBe(0);
    await holder.kill();
    const killedAt = Date.now();
    let taken = 0;
    while (taken === 0 && Date.now() - killedAt < LEASE_MS + REAPER_MS + 1000) {
      taken = await watcher.locks.tryLocks(['K_WRITE']);
      if (taken === 0) await sleep(50);
    }
    expect(taken).toBeGreaterThan(0);
    expect(await statusOf(stamp)).toBe('REAPED');
    await watcher.locks.releaseLocks(taken);
  });

  it('frees them at once, logged RECOVERED, when the killed holder restarts with the same appId', async () => {
    const first = startHolder({ DATABASE_URL: db.url, APP_ID: 'phoenix', LOCKS: 'P_WRITE,Q_READ', LEASE_MS: '60000' });
    const { stamp: firstStamp } = await first.next('held');
    await first.kill();
    expect(await watcher.locks.tryLocks(['P_WRITE'])).toBe(0); // long lease: the reaper leaves it alone
    const second = startHolder({ DATABASE_URL: db.url, APP_ID: 'phoenix', LOCKS: 'P_WRITE', LEASE_MS: '60000' });
    const { stamp: secondStamp } = await second.next('held');
    expect(await statusOf(firstStamp)).toBe('RECOVERED');
    // Fencing tokens (stamps) increase strictly for the name across the restart.
    expect(Number(secondStamp)).toBeGreaterThan(Number(firstStamp));
    await second.kill();
  });

  it('a holder frozen past its lease cannot commit: markBusinessDone throws, its write is absent, the new holder’s is present', async () => {
    const holder = startHolder({
      DATABASE_URL: db.url,
      APP_ID: 'paused',
      LOCKS: 'LOAN:7_WRITE',
      LEASE_MS: String(LEASE_MS),
      MODE: 'business',
    });
    const { stamp } = await holder.next('held');
    await holder.next('wrote');
    const taken = await takeOverWhileFrozen(holder.child, 'LOAN:7_WRITE');
    expect(taken).toBeGreaterThan(Number(stamp)); // the new holder's fencing token is larger
    holder.send('commit');
    expect(await holder.next('lost')).toMatchObject({ error: 'LockLostError' });
    expect(await db.query('SELECT writer FROM business ORDER BY writer')).toEqual([{ writer: 'watcher' }]);
    expect(await statusOf(stamp)).toBe('REAPED');
    expect((await lockRows(db)).filter((row) => row.lock_name === 'LOAN:7')).toEqual([]);
  });

  it('the same through @WithLocks({ locks: (loanId) => …, transaction: true }): the frozen holder rolls back with LockLostError', async () => {
    await db.query('TRUNCATE business');
    const holder = startHolder({ DATABASE_URL: db.url, APP_ID: 'paused-fenced', LOCKS: '8', LEASE_MS: String(LEASE_MS), MODE: 'fenced' });
    const { stamp } = await holder.next('wrote');
    await takeOverWhileFrozen(holder.child, 'LOAN:8_WRITE');
    holder.send('commit');
    expect(await holder.next('lost')).toMatchObject({ error: 'LockLostError' });
    expect(await db.query('SELECT writer FROM business ORDER BY writer')).toEqual([{ writer: 'watcher' }]);
    expect(await statusOf(stamp)).toBe('REAPED');
  });
});
