import { Injectable, type INestApplication, Module, type Type } from '@nestjs/common';
import { Cron, Timeout } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import {
  InvalidLockArgumentError,
  InvalidLockSpecError,
  LockConfigurationError,
  LockService,
  type ScheduledTickOptions,
  WithLocks,
} from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { lockAppImports } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';

/** Two job classes of one name in two modules, as two feature modules each with a `TasksService` have. */
function twinModule(module: string): Type {
  @Injectable()
  class TasksService {
    @Cron('0 0 0 1 1 *')
    @WithLocks(`${module}_WRITE` as const)
    async run(): Promise<void> {}
  }
  @Module({ providers: [TasksService] })
  class TwinModule {}
  Object.defineProperty(TwinModule, 'name', { value: `${module}Module` });
  return TwinModule;
}

@Injectable()
class PerReplicaJobs {
  @Cron('0 0 0 1 1 *')
  @WithLocks({ locks: ['LONG_WRITE'], scheduledRuns: 'per-replica' })
  async run(): Promise<void> {}
}

@Injectable()
class StartupJobs {
  @Timeout(60_000)
  @WithLocks('LONG_STARTUP_WRITE')
  async run(): Promise<void> {}
}

@Injectable()
class YearlyJobs {
  @Cron('0 0 0 1 1 *', { name: 'yearly-report' })
  @WithLocks('YEARLY_WRITE')
  async run(): Promise<void> {}
}

for (const dialect of DIALECTS) {
  dialect.describe(`Scheduled jobs' identities, refused at start-up when they cannot work, on ${dialect.name}`, () => {
    let db: TestDatabase;
    const apps: INestApplication[] = [];

    beforeAll(async () => {
      db = await dialect.createDatabase();
    });
    afterAll(async () => {
      await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
      await db.drop();
    });

    /** An application of `imports` / `providers` with `appId`, not yet initialised. */
    async function create(appId: string, imports: Type[], providers: Type[] = []): Promise<INestApplication> {
      @Module({ imports: [...lockAppImports(db.url, { appId }), ...imports], providers })
      class IdentityModule {}
      const moduleRef = await Test.createTestingModule({ imports: [IdentityModule] }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      apps.push(app);
      return app;
    }

    it('refuses two jobs of one identity (two TasksService classes), naming both places and the fix (item 4)', async () => {
      const app = await create('identity-twins', [twinModule('REPORTS'), twinModule('BILLING')]);
      const refusal = app.init();
      await expect(refusal).rejects.toThrow(LockConfigurationError);
      await expect(refusal).rejects.toThrow(
        /"TasksService\.run": TasksService\.run in REPORTSModule, and TasksService\.run in BILLINGModule.*give one of them a name/,
      );
    });

    it.each([
      ['a per-replica @Cron job', PerReplicaJobs, 'PerReplicaJobs.run', 'a'],
      ['a @Timeout job', StartupJobs, 'StartupJobs.run', 'b'],
    ])('refuses %s whose <job>@<appId> is longer than the 200-character column, naming appId (item 5)', async (_case, provider, job, pod) => {
      // A valid appId (up to 200 characters), too long once appended to the job's name.
      const appId = `pod-${pod}-${'x'.repeat(180)}`;
      const refusal = (await create(appId, [], [provider])).init();
      await expect(refusal).rejects.toThrow(LockConfigurationError);
      await expect(refusal).rejects.toThrow(new RegExp(`"${job.replace('.', '\\.')}".*appId "${appId}".*beyond the 200 .*shorter appId`));
    });

    describe('LockService.scheduledTick (item 8)', () => {
      let locks: LockService;

      beforeAll(async () => {
        const app = await create('identity-runtime', [], [YearlyJobs]);
        await app.init();
        locks = app.get(LockService);
      });

      it.each<[string, string, ScheduledTickOptions, typeof InvalidLockArgumentError | typeof InvalidLockSpecError]>([
        ['an empty name', '', { cron: '* * * * * *', locks: ['A_WRITE'] }, InvalidLockArgumentError],
        ['a name of 201 characters', 'j'.repeat(201), { cron: '* * * * * *', locks: ['A_WRITE'] }, InvalidLockArgumentError],
        ['no schedule', 'job', { locks: ['A_WRITE'] } as unknown as ScheduledTickOptions, InvalidLockArgumentError],
        ['both schedules', 'job', { cron: '* * * * * *', intervalMs: 1000, locks: ['A_WRITE'] } as unknown as ScheduledTickOptions, InvalidLockArgumentError],
        ['a bad expression', 'job', { cron: '61 * * * * *', locks: ['A_WRITE'] }, InvalidLockArgumentError],
        ['a bad time zone', 'job', { cron: '* * * * * *', timeZone: 'Mars/Olympus', locks: ['A_WRITE'] }, InvalidLockArgumentError],
        ['a period of 0 ms', 'job', { intervalMs: 0, locks: ['A_WRITE'] }, InvalidLockArgumentError],
        ['an invalid lock spec', 'job', { intervalMs: 1000, locks: ['A_SHARED' as never] }, InvalidLockSpecError],
      ])('refuses %s before any database call', (_case, job, options, error) => {
        expect(() => locks.scheduledTick(job, options, () => undefined)).toThrow(error);
      });

      it('refuses the identity of another scheduled job of the application', () => {
        expect(() => locks.scheduledTick('yearly-report', { intervalMs: 1000, locks: ['Y_WRITE'] }, () => undefined)).toThrow(
          /"yearly-report": YearlyJobs\.run in .*, and LockService\.scheduledTick\('yearly-report'\)/,
        );
        locks.scheduledTick('hourly-report', { cron: '0 0 * * * *', locks: ['H_WRITE'] }, () => undefined);
        expect(() => locks.scheduledTick('hourly-report', { cron: '0 0 * * * *', locks: ['H_WRITE'] }, () => undefined)).toThrow(
          LockConfigurationError,
        );
      });
    });
  });
}
