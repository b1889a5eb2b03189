import { Injectable, Logger, type LoggerService } from '@nestjs/common';
import {
  InvalidLockSpecError,
  LockModuleNotInitializedError,
  LockNotAcquiredError,
  LockUpgradeError,
  WithLocks,
} from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

@Injectable()
class Repayments {
  readonly seen: string[][] = [];

  @WithLocks('LOAN_WRITE')
  async repay(amount: number): Promise<number> {
    this.seen.push((await lockRows(db)).map((r) => `${r.lock_name}:${r.mode}`));
    await new Promise((resolve) => setTimeout(resolve, 50)); // hold long enough for a concurrent call to meet it
    return amount * 2;
  }

  @WithLocks('LOAN_WRITE', 'LEDGER_WRITE')
  async repayAndPost(): Promise<string> {
    // Nested: LOAN is held by this chain already (same mode); only LEDGER is new to `repay`'s group... none here.
    await this.repay(1);
    return this.post();
  }

  @WithLocks('LOAN_READ', 'LEDGER_WRITE')
  async post(): Promise<string> {
    // Called from repayAndPost: LOAN held for write (stronger) and LEDGER for write: nothing new to take.
    return 'posted';
  }

  @WithLocks('LOAN_READ')
  async audit(): Promise<void> {
    await this.repay(1); // read → write inside one chain: refused, not a hang
  }

  @WithLocks('LOAN_WRITE')
  async fail(): Promise<void> {
    throw new RangeError('business failure');
  }

  @WithLocks({ locks: ['LOAN_WRITE'], onUnavailable: 'skip' })
  async tryRepay(): Promise<string> {
    return 'ran';
  }

  @WithLocks({ locks: ['LOAN_WRITE', 'LEDGER_WRITE', 'RATES_READ'], onUnavailable: 'skip' })
  async tryRepayAndPost(): Promise<string> {
    return 'ran';
  }
}

describe('@WithLocks before any application', () => {
  it('rejects with LockModuleNotInitializedError', async () => {
    await expect(new Repayments().repay(1)).rejects.toThrow(LockModuleNotInitializedError);
  });
});

for (const dialect of DIALECTS) dialect.describe(`@WithLocks on provider methods on ${dialect.name}`, () => {
  let app: LockApp;
  let other: LockApp;
  let repayments: Repayments;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    other = await createLockApp(db.url, { appId: 'transfers' });
    app = await createLockApp(db.url, { appId: 'repayments' }, 4, [Repayments]);
    repayments = app.app.get(Repayments);
  });
  afterAll(async () => {
    await app.close();
    await other.close();
    await db.drop();
  });
  afterEach(async () => {
    expect(await lockRows(db)).toEqual([]);
  });

  it('runs the method under the lock and returns its value', async () => {
    expect(await repayments.repay(21)).toBe(42);
    expect(repayments.seen.at(-1)).toEqual(['LOAN:W']);
  });

  it('throws LockNotAcquiredError, without running the method, while another instance holds the lock', async () => {
    const stamp = await other.locks.tryLocks(['LOAN_READ']);
    const calls = repayments.seen.length;
    try {
      const error = await repayments.repay(1).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockNotAcquiredError);
      expect(error).toMatchObject({ target: 'Repayments.repay', locks: [{ name: 'LOAN', mode: 'write' }] });
      expect(repayments.seen.length).toBe(calls);
      expect(await repayments.tryRepay()).toBeUndefined(); // onUnavailable: 'skip'
    } finally {
      await other.locks.releaseLocks(stamp);
    }
    expect(await repayments.tryRepay()).toBe('ran');
  });

  /** The lines logged by `tryRepayAndPost` while another app holds `held`. */
  async function skipLines(held: 'LEDGER_READ' | 'LEDGER_WRITE'): Promise<string[]> {
    const logged: string[] = [];
    const capture: LoggerService = { log: (message: string) => logged.push(message), error() {}, warn() {} };
    const stamp = await other.locks.tryLocks([held]);
    Logger.overrideLogger(capture);
    try {
      expect(await repayments.tryRepayAndPost()).toBeUndefined();
    } finally {
      Logger.overrideLogger(false);
      await other.locks.releaseLocks(stamp);
    }
    return logged;
  }

  it('logs a skipped call with the locks that were busy, not its whole group, and the mode they are held in', async () => {
    expect(await skipLines('LEDGER_READ')).toEqual([
      'Skipped Repayments.tryRepayAndPost: LEDGER_WRITE refused: LEDGER is held for read elsewhere',
    ]);
  });

  it('says when a skipped call asked for the mode a lock is held in (its permits are used up)', async () => {
    expect(await skipLines('LEDGER_WRITE')).toEqual([
      'Skipped Repayments.tryRepayAndPost: LEDGER_WRITE refused: LEDGER is held for write elsewhere (its write permits are all in use)',
    ]);
  });

  it('is re-entrant: nested decorated calls reuse the locks of their chain', async () => {
    expect(await repayments.repayAndPost()).toBe('posted');
    expect(repayments.seen.at(-1)).toEqual(['LEDGER:W', 'LOAN:W']);
  });

  it('refuses a read-to-write upgrade inside one chain with LockUpgradeError', async () => {
    await expect(repayments.audit()).rejects.toThrow(LockUpgradeError);
  });

  it('passes the method’s own error through unchanged and releases the locks', async () => {
    const error = await repayments.fail().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toBe('business failure');
  });

  it('keeps concurrent chains apart: two calls at once, one runs, one is refused', async () => {
    const results = await Promise.allSettled([repayments.repay(1), repayments.repay(2)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused?.reason).toBeInstanceOf(LockNotAcquiredError);
  });

  it('offers the same as a method: LockService.withLocks', async () => {
    const value = await app.locks.withLocks(['LOAN_WRITE'], async () => (await lockRows(db)).length);
    expect(value).toBe(1);
  });

  it('checks specs when the class is defined', () => {
    expect(() => {
      class Typo {
        @WithLocks('WS2_WRTE' as never)
        async job(): Promise<void> {}
      }
      return Typo;
    }).toThrow(InvalidLockSpecError);
    expect(() => WithLocks('A_READ', 'A_WRITE')).toThrow(/both for read and for write/);
  });

  it('throws LockModuleNotInitializedError once the application is closed', async () => {
    const closing = await createLockApp(db.url, { appId: 'short-lived' }, 3, [Repayments]);
    const instance = closing.app.get(Repayments);
    await closing.close();
    // Its own app is gone; the call falls back to the remaining initialised application, never to a closed one.
    expect(await instance.repay(1)).toBe(2);
    await app.close();
    await other.close();
    await expect(instance.repay(1)).rejects.toThrow(LockModuleNotInitializedError);
    app = await createLockApp(db.url, { appId: 'repayments' }, 4, [Repayments]);
    other = await createLockApp(db.url, { appId: 'transfers' });
  });
});
