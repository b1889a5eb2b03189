import { Controller, Injectable, Module, Param, ParseIntPipe, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import {
  InvalidLockSpecError,
  LockConfigurationError,
  LockLostError,
  LockService,
  NoFencedTransactionError,
  WithLocks,
} from 'nestjs-db-locks';
import type { DataSource, EntityManager } from 'typeorm';
import { expireLeases } from '../support/dialect-sql.js';
import { DIALECTS, namesOf, type TestDialect } from '../support/dialects.js';
import { Gate } from '../support/gate.js';
import { lockAppImports } from '../support/lock-app.js';
import { lockRows } from '../support/lock-rows.js';
import { createNestApp, type TestNestApp } from '../support/nest-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

let db: TestDatabase;
/** The dialect of the describe block running (the blocks of each dialect run one after the other). */
let dialect: TestDialect;
const gate = new Gate();

/** Writes a ledger row through the fenced transaction's manager, in the dialect's placeholders. */
function insertLedger(manager: EntityManager, loan: number, cents: number, stamp: number): Promise<unknown> {
  const values = dialect.name === 'MariaDB' ? '(?, ?, ?)' : '($1, $2, $3)';
  return manager.query(`INSERT INTO ledger (loan, cents, stamp) VALUES ${values}`, [loan, cents, stamp]);
}

/** The isolation level of the transaction `manager` runs, in lower case, as the database reports it. */
async function isolationOf(manager: EntityManager): Promise<string> {
  if (dialect.name === 'PostgreSQL') {
    const [row] = (await manager.query('SHOW transaction_isolation')) as Array<{ transaction_isolation: string }>;
    return row?.transaction_isolation ?? 'unknown';
  }
  // InnoDB's own record of the running transaction (a read makes it start), not the session's default.
  await manager.query('SELECT COUNT(*) FROM locking_log');
  const [row] = (await manager.query(
    'SELECT trx_isolation_level AS level FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()',
  )) as Array<{ level: string }>;
  return row?.level.toLowerCase() ?? 'unknown';
}

/** A grant's log row: its names, status, and whether it was fenced (business_done set). */
async function fencedLog(stamp: number): Promise<{ lock_names: string[]; status: string; fenced: boolean } | undefined> {
  const [row] = await db.query<{ lock_names: unknown; status: string; fenced: unknown }>(
    'SELECT lock_names, status, business_done IS NOT NULL AS fenced FROM locking_log WHERE stamp = $1',
    [stamp],
  );
  return row && { lock_names: namesOf(row.lock_names), status: row.status, fenced: Boolean(Number(row.fenced)) };
}

/** What a method saw from inside its fenced transaction. */
interface Inside {
  stamp: number;
  inTransaction: boolean;
  /** The log row's status, read on another connection while the method ran. */
  status: string;
  /** Whether another connection could see the method's write before the commit. */
  visibleOutside: boolean;
}

@Injectable()
class Ledger {
  constructor(private readonly locks: LockService) {}

  /** Not transactional itself: inside a fenced transaction it writes through it, and its grant is kept until the commit. */
  @WithLocks((loanId: number) => [`ledger:${loanId}_WRITE`])
  async post(loanId: number, cents: number): Promise<number> {
    const stamp = this.locks.currentLock()!.stamp;
    await insertLedger(this.locks.currentManager(), loanId, cents, stamp);
    return stamp;
  }
}

@Injectable()
class Repayments {
  inside?: Inside;
  /** Settles after the method has: what `currentManager()` said to work the method did not await. */
  afterwards?: Promise<string>;

  constructor(
    private readonly locks: LockService,
    private readonly ledger: Ledger,
  ) {}

  @WithLocks({ locks: (loanId: number) => [`loan:${loanId}_WRITE`], transaction: true, retryAfterSeconds: 1 })
  async repay(loanId: number, cents: number, pause = false): Promise<number> {
    const manager = this.locks.currentManager();
    const stamp = this.locks.currentLock()!.stamp;
    await insertLedger(manager, loanId, cents, stamp);
    const [log] = await db.query<{ status: string }>('SELECT status FROM locking_log WHERE stamp = $1', [stamp]);
    const outside = await db.query('SELECT 1 FROM ledger WHERE stamp = $1', [stamp]);
    this.inside = {
      stamp,
      inTransaction: manager.queryRunner?.isTransactionActive === true,
      status: log?.status ?? 'none',
      visibleOutside: outside.length > 0,
    };
    this.afterwards = new Promise((resolve) =>
      setTimeout(() => {
        try {
          this.locks.currentManager();
          resolve('a manager');
        } catch (error) {
          resolve((error as Error).constructor.name);
        }
      }, 20),
    );
    if (pause) await gate.pass();
    if (cents < 0) throw new RangeError('a repayment is never negative');
    return stamp;
  }

  @WithLocks({ locks: (loanId: number) => [`loan:${loanId}_WRITE`], transaction: true })
  async repayAndPost(loanId: number, cents: number): Promise<{ own: number; nested: number; heldAfterNested: string[] }> {
    const own = this.locks.currentLock()!.stamp;
    await insertLedger(this.locks.currentManager(), loanId, cents, own);
    const nested = await this.ledger.post(loanId, -cents);
    const heldAfterNested = (await lockRows(db)).map((r) => r.lock_name).sort();
    return { own, nested, heldAfterNested };
  }

  /** Not transactional: two fenced transactions in a row reuse its grant, and each fences it. */
  @WithLocks((loanId: number) => [`loan:${loanId}_WRITE`])
  async repayTwice(loanId: number): Promise<number[]> {
    return [await this.repay(loanId, 1), await this.repay(loanId, 2)];
  }

  @WithLocks({ locks: ['REPORT_READ'], transaction: { isolation: 'SERIALIZABLE' } })
  async isolation(): Promise<string> {
    return isolationOf(this.locks.currentManager());
  }
}

@Controller('loans')
class RepaymentsController {
  constructor(private readonly repayments: Repayments) {}

  @Post(':id/repayments/:cents')
  async repay(@Param('id', ParseIntPipe) id: number, @Param('cents', ParseIntPipe) cents: number): Promise<{ stamp: number }> {
    return { stamp: await this.repayments.repay(id, cents, id === 99) };
  }
}

async function ledgerRows(): Promise<Array<{ loan: number; cents: number; stamp: string }>> {
  return db.query('SELECT loan, cents, stamp FROM ledger ORDER BY id');
}

/** Expires a grant's lease and lets the reaper free it: what happens to a holder that froze past its lease. */
async function reapNow(app: TestNestApp, stamp: number): Promise<void> {
  await expireLeases(db, dialect, stamp);
  expect(await app.locks.reapStaleLocks()).toBe(1);
}

for (const d of DIALECTS) d.describe(`@WithLocks({ transaction }): fenced business transactions on ${d.name}`, () => {
  let app: TestNestApp;
  let repayments: Repayments;

  beforeAll(async () => {
    dialect = d;
    db = await d.createDatabase();
    await db.query('CREATE TABLE ledger (id serial PRIMARY KEY, loan int NOT NULL, cents int NOT NULL, stamp bigint NOT NULL)');
    // No reaper task: reapNow counts what its own reapStaleLocks() frees (see loan-desk.ts).
    app = await createNestApp(db.url, { appId: 'fenced', reaperIntervalMs: 0 }, { controllers: [RepaymentsController], providers: [Repayments, Ledger] });
    repayments = app.app.get(Repayments);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    gate.reset();
    await db.query('TRUNCATE ledger');
  });
  afterEach(async () => {
    gate.open();
    await until(async () => (await lockRows(db)).length === 0);
  });

  it('runs the method in one transaction that records "business done" last, commits, then releases', async () => {
    const stamp = await repayments.repay(1, 500);
    expect(repayments.inside).toEqual({ stamp, inTransaction: true, status: 'ACQUIRED', visibleOutside: false });
    expect(await ledgerRows()).toEqual([{ loan: 1, cents: 500, stamp: String(stamp) }]);
    expect(await fencedLog(stamp)).toEqual({ lock_names: ['loan:1'], status: 'RELEASED', fenced: true });
    expect(await lockRows(db)).toEqual([]);
    // Work the method started without awaiting it finds no transaction any more.
    expect(await repayments.afterwards).toBe(NoFencedTransactionError.name);
  });

  it('a grant reaped while the method ran rolls the whole transaction back: LockLostError, nothing written', async () => {
    const call = repayments.repay(2, 700, true);
    const settled = call.catch((error: unknown) => error);
    await gate.reached();
    await reapNow(app, repayments.inside!.stamp);
    // Another instance may now take the loan: the frozen holder's write must never land.
    gate.open();
    const error = await settled;
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).stamp).toBe(repayments.inside!.stamp);
    expect(await ledgerRows()).toEqual([]);
    const [log] = await db.query('SELECT status, business_done FROM locking_log WHERE stamp = $1', [repayments.inside!.stamp]);
    expect(log).toEqual({ status: 'REAPED', business_done: null });
  });

  it('a method that throws rolls back and releases; its error passes through unchanged', async () => {
    await expect(repayments.repay(3, -1)).rejects.toThrow(RangeError);
    expect(await ledgerRows()).toEqual([]);
    const [log] = await db.query('SELECT status, business_done FROM locking_log WHERE stamp = $1', [repayments.inside!.stamp]);
    expect(log).toEqual({ status: 'RELEASED', business_done: null });
  });

  it('a nested locked call joins the transaction: its grant is kept until the commit and fenced with it', async () => {
    const { own, nested, heldAfterNested } = await repayments.repayAndPost(4, 300);
    expect(nested).not.toBe(own);
    // The nested call had returned, and its lock was still held: its write was not committed yet.
    expect(heldAfterNested).toEqual(['ledger:4', 'loan:4']);
    expect(await ledgerRows()).toEqual([
      { loan: 4, cents: 300, stamp: String(own) },
      { loan: 4, cents: -300, stamp: String(nested) },
    ]);
    expect(await fencedLog(own)).toEqual({ lock_names: ['loan:4'], status: 'RELEASED', fenced: true });
    expect(await fencedLog(nested)).toEqual({ lock_names: ['ledger:4'], status: 'RELEASED', fenced: true });
  });

  it('LockService.withLocks runs a callback in a fenced transaction too', async () => {
    const stamp = await app.locks.withLocks({ locks: ['PROGRAMMATIC_WRITE'], transaction: true }, async () => {
      const own = app.locks.currentLock()!.stamp;
      await insertLedger(app.locks.currentManager(), 6, 1, own);
      return own;
    });
    expect(await ledgerRows()).toEqual([{ loan: 6, cents: 1, stamp: String(stamp) }]);
    expect(await fencedLog(stamp!)).toEqual({ lock_names: ['PROGRAMMATIC'], status: 'RELEASED', fenced: true });
  });

  it('fences a grant again in each later transaction that reuses it (a grant already BUSINESS_DONE stays fenceable)', async () => {
    const stamps = await repayments.repayTwice(7);
    expect(new Set(stamps).size).toBe(1); // both transactions relied on the caller's grant
    expect(await ledgerRows()).toEqual([
      { loan: 7, cents: 1, stamp: String(stamps[0]) },
      { loan: 7, cents: 2, stamp: String(stamps[0]) },
    ]);
    expect(await fencedLog(stamps[0]!)).toEqual({ lock_names: ['loan:7'], status: 'RELEASED', fenced: true });
  });

  it('uses the isolation level asked for', async () => {
    await expect(repayments.isolation()).resolves.toBe('serializable');
  });

  it('currentManager() outside a fenced transaction throws NoFencedTransactionError', () => {
    expect(() => app.locks.currentManager()).toThrow(NoFencedTransactionError);
  });

  it('over HTTP: committed is 201; a lost grant is 409 naming the stamp and the cause, with nothing written', async () => {
    const ok = await fetch(`${app.baseUrl}/loans/5/repayments/100`, { method: 'POST' });
    expect(ok.status).toBe(201);
    expect(await ledgerRows()).toHaveLength(1);
    await db.query('TRUNCATE ledger');

    const lost = fetch(`${app.baseUrl}/loans/99/repayments/100`, { method: 'POST' });
    await gate.reached();
    const stamp = repayments.inside!.stamp;
    await reapNow(app, stamp);
    gate.open();
    const response = await lost;
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({
      statusCode: 409,
      error: 'Conflict',
      stamp,
      message: `The locks of stamp ${stamp} are lost: its lease ended without a renewal and a reaper freed it`,
      reason: 'its lease ended without a renewal and a reaper freed it',
    });
    expect(await ledgerRows()).toEqual([]);
  });

  it('refuses bad transaction options when the class is defined', () => {
    expect(() => WithLocks({ locks: ['A_WRITE'], transaction: { isolation: 'SNAPSHOT' as never } })).toThrow(InvalidLockSpecError);
    expect(() => WithLocks({ locks: ['A_WRITE'], transaction: { dataSource: '' } })).toThrow(InvalidLockSpecError);
    expect(() => WithLocks({ locks: ['A_WRITE'], transaction: 'yes' as never })).toThrow(InvalidLockSpecError);
  });
});

for (const d of DIALECTS) d.describe(`@WithLocks({ transaction: { dataSource } }) on ${d.name}`, () => {
  @Injectable()
  class Reports {
    constructor(
      private readonly locks: LockService,
      @InjectDataSource('business') private readonly business: DataSource,
    ) {}

    @WithLocks({ locks: ['REPORT_WRITE'], transaction: { dataSource: 'business' } })
    async onBusiness(): Promise<boolean> {
      return this.locks.currentManager().connection === this.business;
    }
  }

  @Injectable()
  class Misconfigured {
    @WithLocks({ locks: ['REPORT_WRITE'], transaction: { dataSource: 'nowhere' } })
    async run(): Promise<void> {}
  }

  async function compile(providers: Array<typeof Reports | typeof Misconfigured>, withBusiness: boolean) {
    const business = TypeOrmModule.forRoot(
      d.name === 'MariaDB'
        ? { name: 'business', type: 'mariadb', url: db.url, timezone: 'Z', extra: { connectionLimit: 2 } }
        : { name: 'business', type: 'postgres', url: db.url, extra: { max: 2 } },
    );
    @Module({ imports: [...lockAppImports(db.url, { appId: 'named' }), ...(withBusiness ? [business] : [])], providers })
    class NamedModule {}
    const moduleRef = await Test.createTestingModule({ imports: [NamedModule] }).compile();
    moduleRef.useLogger(false);
    return moduleRef;
  }

  beforeAll(async () => {
    dialect = d;
    db = await d.createDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('runs the transaction on the named DataSource', async () => {
    const app = await (await compile([Reports], true)).init();
    try {
      await expect(app.get(Reports).onBusiness()).resolves.toBe(true);
      expect(await lockRows(db)).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('fails the start-up when the named DataSource is not registered', async () => {
    const moduleRef = await compile([Misconfigured], false);
    try {
      await expect(moduleRef.init()).rejects.toThrow(LockConfigurationError);
    } finally {
      await moduleRef.close();
    }
  });
});
