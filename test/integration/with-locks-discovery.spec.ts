import { Injectable, type LoggerService, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IllegalMonitorStateError, WithLocks } from 'nestjs-db-locks';
import { lockAppImports } from '../support/lock-app.js';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

@Injectable()
class Ledger {
  @WithLocks('LEDGER_WRITE', 'RATES_READ')
  async post(): Promise<string> {
    return 'posted';
  }

  @WithLocks('LEDGER_WRITE')
  async postWhileReaped(): Promise<string> {
    // Somebody frees our grant behind our back, as a reaper does: the release will match nothing.
    const [row] = await db.query<{ stamp: string }>(`SELECT stamp FROM locking WHERE lock_name = 'LEDGER'`);
    await db.query(`UPDATE locking_log SET status = 'REAPED' WHERE stamp = $1`, [row!.stamp]);
    await db.query(`DELETE FROM locking WHERE lock_name = 'LEDGER'`);
    return 'posted';
  }
}

class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown): void {
    this.lines.push(`log ${String(message)}`);
  }
  warn(message: unknown): void {
    this.lines.push(`warn ${String(message)}`);
  }
  error(message: unknown): void {
    this.lines.push(`error ${String(message)}`);
  }
}

for (const dialect of DIALECTS) dialect.describe(`discovery and release failures on ${dialect.name}`, () => {
  const logger = new CapturingLogger();
  let close: () => Promise<void> = async () => undefined;
  let ledger: Ledger;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    // A row the CHECK constraint would refuse, as if an operator had dropped it: the lock can never be taken.
    await db.query('ALTER TABLE locking_permissions DROP CONSTRAINT locking_permissions_permits_ck');
    await db.query(`INSERT INTO locking_permissions VALUES ('RATES', 'R', 0)`);
    @Module({
      imports: lockAppImports(db.url, { appId: 'ledger' }),
      providers: [Ledger],
    })
    class LedgerModule {}
    const moduleRef = await Test.createTestingModule({ imports: [LedgerModule] }).compile();
    moduleRef.useLogger(logger);
    const app = await moduleRef.init();
    ledger = app.get(Ledger);
    close = () => app.close();
  });
  afterAll(async () => {
    await close();
    await db.drop();
  });

  it('lists every decorated method with its locks, and warns about a lock that can never be taken', () => {
    expect(logger.lines).toContain('log @WithLocks Ledger.post → LEDGER_WRITE, RATES_READ');
    expect(logger.lines).toContain('log @WithLocks Ledger.postWhileReaped → LEDGER_WRITE');
    expect(logger.lines.filter((l) => l.startsWith('warn') && l.includes('RATES (read)'))).toHaveLength(1);
  });

  it('surfaces a failed release: the caller gets the typed error, and it is logged', async () => {
    const error = await ledger.postWhileReaped().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IllegalMonitorStateError);
    expect(logger.lines.some((l) => l.startsWith('error') && l.includes('Ledger.postWhileReaped'))).toBe(true);
  });
});
