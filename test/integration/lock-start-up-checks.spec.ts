import { Injectable } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  InvalidLockArgumentError,
  InvalidLockSpecError,
  LockConfigurationError,
  LockModule,
  LockService,
  WithLocks,
  type LockModuleOptions,
} from 'nestjs-db-locks';
import { Observable, of } from 'rxjs';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

async function boot(db: TestDatabase, lockModule: unknown, providers: unknown[] = []) {
  const moduleRef = await Test.createTestingModule({
    imports: [TypeOrmModule.forRoot({ type: 'postgres', url: db.url }), ScheduleModule.forRoot(), lockModule as never],
    providers: providers as never[],
  }).compile();
  moduleRef.useLogger(false);
  return moduleRef.init();
}

const async = (options: Record<string, unknown>) =>
  LockModule.forRootAsync({ useFactory: () => options as unknown as LockModuleOptions });

describe('mistakes caught at start-up', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it.each([
    [{ appId: 'x', leaseMS: 5000 }, /unknown key "leaseMS": did you mean "leaseMs"\?/],
    [{ appId: 'x', isGlobl: false }, /unknown key "isGlobl": did you mean "isGlobal"\?/],
    [{ appId: 'x', dialekt: 'mysql' }, /unknown key "dialekt": did you mean "dialect"\?/],
    [{ appId: 'x', zzzzzzzzzz: 1 }, /unknown key "zzzzzzzzzz" \(valid keys: appId, /],
  ])('forRoot(%j) is refused at once, naming the closest valid key', (options, message) => {
    expect(() => LockModule.forRoot(options as never)).toThrow(LockConfigurationError);
    expect(() => LockModule.forRoot(options as never)).toThrow(message);
  });

  it('forRootAsync refuses an unknown key of its own at once', () => {
    expect(() => LockModule.forRootAsync({ useFactroy: () => ({ appId: 'x' }) } as never)).toThrow(
      /unknown key "useFactroy": did you mean "useFactory"\?/,
    );
  });

  it.each([
    [{ appId: 'x', leaseMS: 5000 }, /LockModule options has an unknown key "leaseMS": did you mean "leaseMs"\?/],
    [{ appId: 'x', retry: { maxAtempts: 3 } }, /option retry has an unknown key "maxAtempts": did you mean "maxAttempts"\?/],
    [{ appId: 'x', telemetry: { enable: false } }, /option telemetry has an unknown key "enable": did you mean "enabled"\?/],
    [{ appId: 'x', defaultPermits: { writes: 2 } }, /option defaultPermits has an unknown key "writes": did you mean "write"\?/],
    [{ appId: 'x', dialect: 'mysql' }, /dialect shapes the module itself: give it to LockModule\.forRootAsync\(\{ dialect, useFactory/],
  ])('the options a forRootAsync factory returns are checked when the module starts: %j', async (options, message) => {
    const error = await boot(db, async(options)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockConfigurationError);
    expect((error as Error).message).toMatch(message);
  });

  it('the same options without the typo start', async () => {
    const app = await boot(db, async({ appId: 'x', leaseMs: 5000, retry: { maxAttempts: 3 }, telemetry: { enabled: false } }));
    await app.close();
  });

  it('the largest waitMs is 2^31 − 1, and the error says so', async () => {
    const app = await boot(db, LockModule.forRoot({ appId: 'waits' }));
    const locks = app.get(LockService);
    const stamp = await locks.tryLocks(['W_WRITE'], { waitMs: 2 ** 31 - 1 });
    expect(stamp).toBeGreaterThan(0);
    await locks.releaseLocks(stamp);
    const error = await locks.tryLocks(['W_WRITE'], { waitMs: 2 ** 31 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockArgumentError);
    expect((error as Error).message).toBe(
      'Invalid waitMs 2147483648: expected an integer number of milliseconds from 0 to 2147483647 (2^31 − 1, about 24.8 days)',
    );
    await app.close();
    expect(() => WithLocks({ locks: ['W_WRITE'], waitMs: 2 ** 31 })).toThrow(InvalidLockSpecError);
    expect(() => WithLocks({ locks: ['W_WRITE'], waitMs: 2 ** 31 })).toThrow(/from 0 to 2147483647/);
  });

  describe('a @WithLocks method must return a Promise or an Observable', () => {
    @Injectable()
    class Accepted {
      @WithLocks('A_WRITE')
      async inferred() {
        return 1;
      }

      @WithLocks('B_WRITE')
      declared(): Promise<number> {
        return Promise.resolve(2);
      }

      @WithLocks('C_WRITE')
      stream(): Observable<number> {
        return of(3);
      }

      /** A union is recorded as Object: not checkable, accepted. */
      @WithLocks('D_WRITE')
      either(): Promise<number> | Observable<number> {
        return of(4);
      }
    }

    @Injectable()
    class NotAsync {
      // @ts-expect-error -- TypeScript refuses it already; a JavaScript caller or a cast gets past the compiler
      @WithLocks('E_WRITE')
      total(): number {
        return 5;
      }
    }

    @Injectable()
    class Undeclared {
      // @ts-expect-error -- a method that returns nothing is refused by the compiler too
      @WithLocks('F_WRITE')
      run() {
        return void 0;
      }
    }

    it('accepts async methods and methods declared to return a Promise, an Observable or a union', async () => {
      const app = await boot(db, LockModule.forRoot({ appId: 'accepted' }), [Accepted]);
      const accepted = app.get(Accepted);
      expect(await accepted.inferred()).toBe(1);
      expect(await accepted.declared()).toBe(2);
      await app.close();
    });

    it.each([
      ['refused-1', NotAsync, /@WithLocks NotAsync\.total is refused: it is not async and its declared return type is Number/],
      ['refused-2', Undeclared, /@WithLocks Undeclared\.run is refused: it is not async and its declared return type is void or no return type/],
    ])('%s: refuses %p when the module starts', async (appId, provider, message) => {
      const error = await boot(db, LockModule.forRoot({ appId }), [provider]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockConfigurationError);
      expect((error as Error).message).toMatch(message);
    });
  });
});
