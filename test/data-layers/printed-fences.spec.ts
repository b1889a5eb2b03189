import { jest } from '@jest/globals';
import { type INestApplicationContext, Module, type Provider } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LockAdminService, LockLostError, LockModule, LockService } from 'nestjs-db-locks';
import pg from 'pg';
import { REPO_ROOT } from '../readme/documents.js';
import { sessionsWaitingForALock } from '../support/dialect-sql.js';
import { CapturedLog } from '../support/logged-lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { Repayments as DrizzleRepayments } from './printed/drizzle.fence.js';
import { Repayments as KnexRepayments } from './printed/knex.fence.js';
import { Repayments as KyselyRepayments } from './printed/kysely.fence.js';
import { LoanSchema, Repayments as MikroOrmRepayments, RepaymentSchema } from './printed/mikro-orm.fence.js';
import { Repayments as PgRepayments } from './printed/pg.fence.js';
import { Repayments as PrismaRepayments } from './printed/prisma.fence.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

/** What a printed repayment class looks like to this spec, and what it needs beside the lock module. */
interface Printed {
  readonly page: string;
  readonly section: string;
  readonly file: string;
  readonly type: new (...args: never[]) => PrintedRepayments;
  /** The column of `repayments` that holds the amount on that page. */
  readonly amount: 'cents' | 'amount';
  /** Providers the class needs beside `LockService` and `LockFence` (MikroORM's `EntityManager`). */
  readonly providers?: (url: string) => Provider[];
  /** Closes what the class opened from `DATABASE_URL`. */
  readonly close: (instance: object) => Promise<unknown>;
}

const field = <T>(instance: object, name: string) => (instance as Record<string, T>)[name]!;
const FENCED = 'A fenced transaction';

/** The pages' by-hand fenced repayments (`LockFence`), each the file of test/data-layers/printed/ this spec runs. */
const PRINTED: readonly Printed[] = [
  {
    page: 'docs/data-layers.md',
    section: 'A fenced transaction on your own connection: `LockFence`',
    file: 'pg.fence.ts',
    type: PgRepayments,
    amount: 'cents',
    close: (r) => field<pg.Pool>(r, 'pool').end(),
  },
  { page: 'docs/kysely.md', section: FENCED, file: 'kysely.fence.ts', type: KyselyRepayments, amount: 'cents', close: (r) => field<{ destroy(): Promise<void> }>(r, 'db').destroy() },
  { page: 'docs/knex.md', section: FENCED, file: 'knex.fence.ts', type: KnexRepayments, amount: 'cents', close: (r) => field<{ destroy(): Promise<void> }>(r, 'db').destroy() },
  {
    page: 'docs/drizzle.md',
    section: FENCED,
    file: 'drizzle.fence.ts',
    type: DrizzleRepayments,
    amount: 'cents',
    close: (r) => field<{ $client: pg.Pool }>(r, 'db').$client.end(),
  },
  {
    page: 'docs/mikro-orm.md',
    section: FENCED,
    file: 'mikro-orm.fence.ts',
    type: MikroOrmRepayments,
    amount: 'cents',
    providers: (url) => {
      const orm = MikroORM.initSync({ clientUrl: url, entities: [LoanSchema, RepaymentSchema], allowGlobalContext: true });
      return [{ provide: EntityManager, useValue: orm.em }, { provide: MikroORM, useValue: orm }];
    },
    close: (r) => field<EntityManager>(r, 'em').getConnection().close(true),
  },
  { page: 'docs/prisma.md', section: FENCED, file: 'prisma.fence.ts', type: PrismaRepayments, amount: 'amount', close: (r) => field<{ $disconnect(): Promise<void> }>(r, 'prisma').$disconnect() },
];

/** The ```ts blocks of a page's section, each with its final newline. */
function blocksOf(page: string, section: string): string[] {
  const text = read(page).split(`\n## ${section}\n`)[1]?.split('\n## ')[0] ?? '';
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

describe.each(PRINTED)('the fenced repayment $page prints', ({ page, section, file }) => {
  it('is the file of test/data-layers/printed/ that this spec runs', () => {
    expect(blocksOf(page, section)[0]).toBe(read(`test/data-layers/printed/${file}`));
  });
});

/** What a printed repayment class looks like to this spec. */
interface PrintedRepayments {
  repay(id: number, cents: number): Promise<unknown>;
}

/**
 * Runs `hook` once, before the first statement that `matches` on a connection of the application (not the library's,
 * whose connections carry its application_name): the spec's hand between two statements of the printed code.
 */
function beforeStatement(matches: RegExp, hook: () => Promise<void>): void {
  armed = { matches, hook };
}
let armed: { matches: RegExp; hook: () => Promise<void> } | undefined;
const originalQuery = pg.Client.prototype.query;

describe.each(PRINTED)('$page: the repayment as printed, one truthful outcome (PostgreSQL)', (printed) => {
  let db: TestDatabase;
  let app: INestApplicationContext;
  let locks: LockService;
  let admin: LockAdminService;
  let repayments: PrintedRepayments;
  const log = new CapturedLog();
  const balance = async (id: number) => Number((await db.query<{ balance: number }>('SELECT balance FROM loans WHERE id = $1', [id]))[0]!.balance);
  const count = async (id: number) => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM repayments WHERE loan_id = $1', [id]))[0]!.n);

  beforeAll(async () => {
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]): unknown {
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
      const library = String((this as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name ?? '').startsWith('nestjs-db-locks');
      if (armed && !library && text && armed.matches.test(text)) {
        const { hook } = armed;
        armed = undefined;
        return hook().then(() => (originalQuery as (...a: unknown[]) => unknown).apply(this, args));
      }
      return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pg.Client.prototype.query;
    db = await createTestDatabase();
    await db.query('CREATE TABLE loans (id int PRIMARY KEY, balance int NOT NULL)');
    await db.query(`CREATE TABLE repayments (id serial PRIMARY KEY, loan_id int NOT NULL, ${printed.amount} int NOT NULL)`);
    await db.query('INSERT INTO loans (id, balance) VALUES (1, 100), (2, 100), (3, 100)');
    process.env.DATABASE_URL = db.url; // the printed class opens its pool from it
    @Module({
      imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'printed-1', url: db.url, leaseMs: 3000, reaperIntervalMs: 0, migrationsRun: true })],
      providers: [printed.type, ...(printed.providers?.(db.url) ?? [])],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    moduleRef.useLogger(log);
    app = await moduleRef.init();
    locks = app.get(LockService);
    admin = app.get(LockAdminService);
    repayments = app.get(printed.type);
  });
  afterAll(async () => {
    pg.Client.prototype.query = originalQuery;
    delete process.env.DATABASE_URL;
    if (repayments) await printed.close(repayments);
    await app?.close();
    await db?.drop();
  });

  /** The printed pool's next users: repayments of loan 1, on the connections the lost one gave back. */
  async function nextUsersCommit(): Promise<void> {
    for (let i = 0; i < 3; i++) await expect(repayments.repay(1, 1)).resolves.toBe(true);
  }

  it('repays while the grant is held', async () => {
    await expect(repayments.repay(1, 10)).resolves.toBe(true);
    expect(await balance(1)).toBe(90);
    expect(await count(1)).toBe(1);
  });

  it('answers committed when an operator forces the grant free at the commit: no error over it, one WARN line', async () => {
    let forced: Promise<unknown> | undefined;
    beforeStatement(/^commit;?$/i, async () => {
      const [grant] = await locks.getGrants({ name: 'loan:2' });
      forced = admin.forceRelease(grant!.stamp, 'operator at the commit');
      // It waits behind the fence's row lock: the commit goes first, the holder's release after it.
      await until(async () => (await sessionsWaitingForALock(db, { name: 'PostgreSQL' })) > 0, 10_000);
    });
    // The holder's own release after the commit may reach the log row first (PostgreSQL follows the row to its newest
    // version), and then the operator is told the grant was gone: true too, but not this test's case.
    const release = locks.releaseLocks.bind(locks);
    const releases = jest.spyOn(locks, 'releaseLocks').mockImplementation(async (stamp: number) => {
      await forced?.catch(() => undefined);
      return release(stamp);
    });
    await expect(repayments.repay(2, 10)).resolves.toBe(true).finally(() => releases.mockRestore());
    await forced;
    expect(await balance(2)).toBe(90);
    expect(log.lines.filter((line) => line.level === 'error')).toEqual([]);
    expect(log.matching(/ended after their fenced transaction committed/)).toHaveLength(1);
  });

  it('a grant lost and told before the fence: LockLostError, nothing written, not even by the pool connection\'s next user', async () => {
    beforeStatement(/^insert into\s+("public"\.)?"?repayments/i, async () => {
      const [grant] = await locks.getGrants({ name: 'loan:3' });
      const signal = locks.getSignal(grant!.stamp);
      await admin.forceRelease(grant!.stamp, 'operator before the fence');
      await until(() => signal.aborted, 15_000); // the renewal told the holder
    });
    await expect(repayments.repay(3, 10)).rejects.toBeInstanceOf(LockLostError);
    await nextUsersCommit();
    expect(await balance(3)).toBe(100);
    expect(await count(3)).toBe(0);
  });
});
