import { Injectable, Module, type Provider } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  LockConfigurationError,
  type LockFenceStatement,
  LockModule,
  LockService,
  type LockTransactionRunner,
  NoFencedTransactionError,
  WithLocks,
} from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';

/** A runner token the application registers (or not) as a provider. */
abstract class BooksTransactions implements LockTransactionRunner<{ id: string }> {
  abstract run<T>(work: (tx: { id: string }) => Promise<T>): Promise<T>;
  abstract execute(tx: { id: string }, statement: LockFenceStatement): Promise<unknown>;
}

@Injectable()
class Books {
  @WithLocks({ locks: ['BOOKS_WRITE'], transaction: { runner: BooksTransactions } })
  async close(): Promise<void> {}
}

@Injectable()
class BothTransactions {
  @WithLocks({ locks: ['BOOKS_WRITE'], transaction: { runner: BooksTransactions, dataSource: 'books' } })
  async close(): Promise<void> {}
}

const dialect = DIALECTS[0]!;

dialect.describe('@WithLocks({ transaction: { runner } }) refused at start-up', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.createDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** Starts an application with `providers`; resolves with what its start-up threw (undefined: it started). */
  async function startUp(providers: Provider[]): Promise<unknown> {
    @Module({ imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'runner-config', url: db.url })], providers })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    moduleRef.useLogger(false);
    try {
      await moduleRef.init();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      await moduleRef.close();
    }
  }

  const expectRefused = async (providers: Provider[], message: RegExp) => {
    const error = await startUp(providers);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(message);
  };

  it('refuses a runner that is not a provider of the application, naming it', async () => {
    await expectRefused([Books], /Books\.close: transaction\.runner BooksTransactions is not a provider of the application/);
  });

  it('refuses a provider that is not a runner, saying what it needs', async () => {
    await expectRefused(
      [Books, { provide: BooksTransactions, useValue: { run: async () => undefined } }],
      /BooksTransactions is not a LockTransactionRunner: it needs run\(work, options\).*execute\(tx, statement\)/,
    );
  });

  it('refuses a runner combined with a dataSource', async () => {
    await expectRefused(
      [BothTransactions, { provide: BooksTransactions, useValue: { run: async () => undefined, execute: async () => 1 } }],
      /names both transaction\.runner and transaction\.dataSource.*Keep one of them/,
    );
  });

  it('starts with a runner provider; currentTransaction outside its transaction throws; a runner that skips the method is refused at the call', async () => {
    const runner = { run: async () => undefined, execute: async () => 1 };
    @Module({
      imports: [ScheduleModule.forRoot(), LockModule.forRoot({ appId: 'runner-config', url: db.url })],
      providers: [Books, { provide: BooksTransactions, useValue: runner }],
    })
    class AppModule {}
    const app = await (await Test.createTestingModule({ imports: [AppModule] }).compile()).init();
    try {
      const locks = app.get(LockService);
      expect(() => locks.currentTransaction(BooksTransactions)).toThrow(NoFencedTransactionError);
      expect(() => locks.currentTransaction(BooksTransactions)).toThrow(/transaction: \{ runner: BooksTransactions \}/);
      // LockService.withLocks checks the runner at the call, before anything is taken.
      await expect(
        locks.withLocks({ locks: ['BOOKS_WRITE'], transaction: { runner: 'no-such-runner' } }, async () => undefined),
      ).rejects.toThrow(/transaction\.runner 'no-such-runner' is not a provider/);
      // A runner whose run resolves without running the method is refused at the call, and the grant freed.
      await expect(app.get(Books).close()).rejects.toThrow(/Books\.close: transaction\.runner resolved before the method/);
      const stamp = await locks.tryLocks(['BOOKS_WRITE']);
      expect(stamp).toBeGreaterThan(0); // nothing was left held
      await locks.releaseLocks(stamp);
    } finally {
      await app.close();
    }
  });
});

