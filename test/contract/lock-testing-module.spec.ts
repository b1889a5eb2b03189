import { jest } from '@jest/globals';
import { Controller, Injectable, Param, ParseIntPipe, Post, type INestApplication } from '@nestjs/common';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  InMemoryLockDatabase,
  LockAdminService,
  LockConfigurationError,
  LockNotAcquiredError,
  LockService,
  LockTestingModule,
  WithLocks,
} from 'nestjs-db-locks';
import { Gate } from '../support/gate.js';
import { until } from '../support/until.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** The service of docs/testing.md's example. */
@Injectable()
class TransferService {
  readonly balances = new Map<number, number>([
    [1, 100],
    [2, 0],
  ]);

  @WithLocks({ locks: (from: number, to: number) => [`account:${from}_WRITE`, `account:${to}_WRITE`] })
  async transfer(from: number, to: number, cents: number, pause?: Promise<void>): Promise<void> {
    await pause;
    this.balances.set(from, (this.balances.get(from) ?? 0) - cents);
    this.balances.set(to, (this.balances.get(to) ?? 0) + cents);
  }
}

@Injectable()
class LedgerService {
  constructor(private readonly locks: LockService) {}

  @WithLocks({ locks: ['LEDGER_WRITE'], transaction: true })
  async post(): Promise<number> {
    const [row] = (await this.locks.currentManager().query('SELECT 41 + 1 AS answer')) as Array<{ answer: number }>;
    return row!.answer;
  }

  @WithLocks('LEDGER_READ')
  async read(): Promise<string> {
    return 'read';
  }
}

/** A job ticking every 200 ms, once per tick across the instances that share a database. */
@Injectable()
class TickJob {
  static runs = 0;

  @Interval(200)
  @WithLocks('TICK_WRITE')
  async tick(): Promise<void> {
    TickJob.runs++;
  }
}

@Controller('accounts')
class AccountsController {
  @Post(':id/close')
  @WithLocks({ locks: (id: number) => [`account:${id}_WRITE`], retryAfterSeconds: 2 })
  async close(@Param('id', ParseIntPipe) id: number): Promise<{ closed: number }> {
    return { closed: id };
  }
}

describe('LockTestingModule: the real LockService over the in-memory store', () => {
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });

  async function start(imports: Parameters<typeof Test.createTestingModule>[0]['imports'], providers: Array<new (...args: never[]) => object> = []) {
    moduleRef = await Test.createTestingModule({ imports, providers }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    return moduleRef;
  }

  it('runs the docs example: a second transfer on the same account is refused while the first holds it', async () => {
    const ref = await start([LockTestingModule.forRoot()], [TransferService]);
    const transfers = ref.get(TransferService);
    const gate = new Gate();
    const first = transfers.transfer(1, 2, 30, gate.pass());
    await gate.reached();
    await expect(transfers.transfer(2, 1, 5)).rejects.toThrow(LockNotAcquiredError);
    gate.open();
    await first;
    await transfers.transfer(2, 1, 5);
    expect([...transfers.balances]).toEqual([
      [1, 75],
      [2, 25],
    ]);
    const log = await ref.get(LockAdminService).getLog({ name: 'account:1' });
    expect(log.map((entry) => entry.status)).toEqual(['RELEASED', 'RELEASED']);
    expect(ref.get(LockService).appId).toBe('test');
    expect(await ref.get(LockService).getHealth()).toMatchObject({ healthy: true, appIdHeld: true, schema: 'current', problems: [] });
  });

  it('maps lock errors to HTTP statuses as LockModule does', async () => {
    moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot()],
      controllers: [AccountsController],
    }).compile();
    const app: INestApplication = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const { port } = app.getHttpServer().address() as { port: number };
      const locks = app.get(LockService);
      const held = await locks.tryLocks([{ name: 'account:7', mode: 'write' }]);
      const busy = await fetch(`http://127.0.0.1:${port}/accounts/7/close`, { method: 'POST' });
      expect(busy.status).toBe(423);
      expect(busy.headers.get('retry-after')).toBe('2');
      await locks.releaseLocks(held);
      const done = await fetch(`http://127.0.0.1:${port}/accounts/7/close`, { method: 'POST' });
      expect([done.status, await done.json()]).toEqual([201, { closed: 7 }]);
    } finally {
      await app.close();
      moduleRef = undefined;
    }
  });

  it('starts with a fenced-transaction method, which fails with LockConfigurationError (nothing taken) without a DataSource', async () => {
    const ref = await start([LockTestingModule.forRoot()], [LedgerService]);
    const ledger = ref.get(LedgerService);
    await expect(ledger.post()).rejects.toThrow(LockConfigurationError);
    await expect(ledger.post()).rejects.toThrow(/dataSource/);
    expect(await ref.get(LockService).getGrants()).toEqual([]);
    expect(await ledger.read()).toBe('read'); // the class's other methods work
  });

  describe('with a DataSource for fenced transactions', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase({ migrate: false });
    });
    afterAll(() => db?.drop());

    it('runs the method in a transaction on it, fenced against the in-memory grant', async () => {
      const ref = await start(
        [TypeOrmModule.forRoot({ type: 'postgres', url: db.url, entities: [] }), LockTestingModule.forRoot({ dataSource: 'default' })],
        [LedgerService],
      );
      expect(await ref.get(LedgerService).post()).toBe(42);
      const [entry] = await ref.get(LockAdminService).getLog({ name: 'LEDGER' });
      expect(entry).toMatchObject({ status: 'RELEASED', businessDoneAt: expect.any(Date) });
    });
  });

  it('shares one InMemoryLockDatabase between modules: instances contend, and a twin app id is refused', async () => {
    const database = new InMemoryLockDatabase();
    const one = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ appId: 'one', database })] }).compile();
    const two = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ appId: 'two', database })] }).compile();
    const twin = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ appId: 'one', database })] }).compile();
    for (const ref of [one, two, twin]) ref.useLogger(false);
    await one.init();
    await two.init();
    try {
      const stamp = await one.get(LockService).tryLocks(['SHARED_WRITE']);
      expect(await two.get(LockService).tryLocks(['SHARED_READ'])).toBe(0);
      await expect(twin.init()).rejects.toThrow(/app id|appId/i);
      await one.get(LockService).releaseLocks(stamp);
      expect(await two.get(LockService).tryLocks(['SHARED_READ'])).toBeGreaterThan(stamp);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('runs scheduled ticks once across the instances of one database, with a run history', async () => {
    const database = new InMemoryLockDatabase();
    const refs = await Promise.all(
      ['a', 'b'].map((appId) =>
        Test.createTestingModule({
          imports: [ScheduleModule.forRoot(), LockTestingModule.forRoot({ appId, database })],
          providers: [TickJob],
        }).compile(),
      ),
    );
    for (const ref of refs) ref.useLogger(false);
    await Promise.all(refs.map((ref) => ref.init()));
    try {
      await until(async () => (await refs[0]!.get(LockAdminService).getJobRuns()).filter((r) => r.outcome === 'succeeded').length >= 3);
    } finally {
      await Promise.all(refs.map((ref) => ref.close()));
    }
    const runs = await refs[1]!.get(LockAdminService).getJobRuns({ job: 'TickJob.tick' });
    const ended = runs.filter((run) => run.outcome !== 'running');
    // Each tick ran once, on one of the two instances; the other skipped it (busy or elsewhere).
    expect(new Set(runs.map((run) => run.tick.getTime())).size).toBe(runs.length);
    expect(ended.every((run) => run.outcome === 'succeeded' && ['a', 'b'].includes(run.appId ?? ''))).toBe(true);
    expect(TickJob.runs).toBe(runs.filter((run) => run.appId !== null).length); // one execution per claimed tick
    expect(runs.some((run) => run.skippedBusy + run.skippedElsewhere > 0)).toBe(true);
    const [job] = await refs[0]!.get(LockAdminService).getJobs();
    expect(job).toMatchObject({ job: 'TickJob.tick', lastSucceededAt: expect.any(Date) });
  });

  it("runs under a test's fake timers: the store's operations wait for no timer", async () => {
    const ref = await start([LockTestingModule.forRoot()], [TransferService]);
    jest.useFakeTimers();
    try {
      await ref.get(TransferService).transfer(1, 2, 10);
      const log = await ref.get(LockAdminService).getLog({ name: 'account:2' });
      expect(log.map((entry) => entry.status)).toEqual(['RELEASED']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('gives every module tables of its own by default', async () => {
    const a = await Test.createTestingModule({ imports: [LockTestingModule.forRoot()] }).compile();
    const b = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ appId: 'other' })] }).compile();
    await a.init();
    await b.init();
    try {
      expect(await a.get(LockService).tryLocks(['OWN_WRITE'])).toBeGreaterThan(0);
      expect(await b.get(LockService).tryLocks(['OWN_WRITE'])).toBeGreaterThan(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

