import { type INestApplicationContext, type LoggerService, Module, type Provider, type Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockAdminService, LockFence, LockModule, LockService } from 'nestjs-db-locks';
import type { TestDialect } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/**
 * The loans of the fence specs: a database of their own with `loans` (ids 1-9, balance 100) and `repayments`, and an
 * application on it with no TypeORM of its own (`LockModule.forRoot({ url })`, leases of 3 s).
 */
export interface LoanDesk {
  readonly db: TestDatabase;
  readonly app: INestApplicationContext;
  readonly locks: LockService;
  readonly fence: LockFence;
  readonly admin: LockAdminService;
  /** A lease end an hour ago, in the dialect's SQL (to make a grant look stale to the reaper). */
  readonly pastLease: string;
  /** How many repayments of `loan` were committed. */
  repayments(loan: number): Promise<number>;
  /** The status of the grant's log row. */
  logStatus(stamp: number): Promise<string | undefined>;
  /**
   * Takes loan 9, runs `commit` (a fenced repayment under the stamp), then forces the grant free behind its holder's
   * back, with a witness grant that is not fenced: resolves, once the holder has noticed the witness's end, with
   * whether the committed grant's signal fired too.
   */
  toldLostAfterCommit(commit: (stamp: number) => Promise<void>): Promise<boolean>;
  /** Where the application listens, when it serves controllers (`serve`). */
  readonly baseUrl?: string;
  close(): Promise<void>;
}

/** Controllers and providers of the application, served over HTTP on 127.0.0.1. */
export interface LoanDeskServing {
  readonly controllers?: Type[];
  readonly providers?: Provider[];
}

/** `logger`: where the application's log lines go (none by default). */
export async function openLoanDesk(
  dialect: TestDialect,
  appId: string,
  serve?: LoanDeskServing,
  logger?: LoggerService,
): Promise<LoanDesk> {
  const db = await dialect.createDatabase();
  await db.query('CREATE TABLE loans (id int PRIMARY KEY, balance int NOT NULL)');
  await db.query('CREATE TABLE repayments (loan_id int NOT NULL, amount int NOT NULL)');
  await db.query(`INSERT INTO loans (id, balance) VALUES ${[1, 2, 3, 4, 5, 6, 7, 8, 9].map((id) => `(${id}, 100)`).join(', ')}`);
  @Module({
    imports: [
      ScheduleModule.forRoot(),
      // No reaper task: a test that expires a lease counts what its own reapStaleLocks() frees; a task of its own
      // (every 10 s by default) firing between the two would free the grant first.
      LockModule.forRoot({ appId, url: db.url, leaseMs: 3000, reaperIntervalMs: 0 }),
    ],
    controllers: serve?.controllers ?? [],
    providers: serve?.providers ?? [],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  moduleRef.useLogger(logger ?? false);
  let app: INestApplicationContext;
  let baseUrl: string | undefined;
  if (serve) {
    const http = moduleRef.createNestApplication({ logger: logger ?? false });
    await http.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(http.getHttpServer().address() as { port: number }).port}`;
    app = http;
  } else {
    app = await moduleRef.init();
  }
  const locks = app.get(LockService);
  const admin = app.get(LockAdminService);
  return {
    db,
    app,
    locks,
    fence: app.get(LockFence),
    admin,
    baseUrl,
    pastLease: dialect.name === 'PostgreSQL' ? `now() - interval '1 hour'` : 'UTC_TIMESTAMP(6) - INTERVAL 1 HOUR',
    repayments: async (loan) =>
      Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM repayments WHERE loan_id = $1', [loan]))[0]!.n),
    logStatus: async (stamp) =>
      (await db.query<{ status: string }>('SELECT status FROM locking_log WHERE stamp = $1', [stamp]))[0]?.status,
    toldLostAfterCommit: async (commit) => {
      const committed = await locks.tryLocks(['LOAN:9_WRITE']);
      const witness = await locks.tryLocks(['WITNESS_WRITE']);
      await commit(committed);
      const signal = locks.getSignal(committed);
      const witnessSignal = locks.getSignal(witness);
      await admin.forceRelease(committed, 'after the commit');
      await admin.forceRelease(witness, 'witness');
      await until(() => witnessSignal.aborted, 20_000);
      await locks.releaseLocks(committed).catch(() => undefined);
      return signal.aborted;
    },
    close: async () => {
      await app.close();
      await db.drop();
    },
  };
}
