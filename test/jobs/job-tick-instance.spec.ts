import { Injectable, Module } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { LockAdminService, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { lockAppImports } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** A `@WithLocks` job of its own (once a year: its schedule never fires during the test), also called by others. */
@Injectable()
class Exports {
  private runs = 0;

  @Cron('0 0 0 1 1 *')
  @WithLocks('I50_EXPORT_WRITE')
  async run(): Promise<number> {
    return ++this.runs;
  }
}

/** A plain scheduled method (no `@WithLocks`) of the same name that calls the other instance's `run` directly. */
@Injectable()
class Nightly {
  /** What each call of `Exports.run` answered. */
  readonly answers: unknown[] = [];

  constructor(private readonly exports: Exports) {}

  @Cron('* * * * * *')
  async run(): Promise<void> {
    this.answers.push(await this.exports.run());
  }
}

/**
 * Issue 50, item 11 (invariant 13): a tick is the schedule's own invocation of a job. A plain `@Cron` method that calls
 * another instance's same-named `@WithLocks` job makes a direct call: each one runs under the job's locks, none is
 * claimed as a tick of that job (one would run, the next ones be skipped as "run elsewhere").
 */
for (const dialect of DIALECTS) {
  dialect.describe(`A plain @Cron method calling another instance's same-named job, on ${dialect.name}`, () => {
    let db: TestDatabase;

    beforeAll(async () => {
      db = await dialect.createDatabase();
    });
    afterAll(async () => {
      await db?.drop();
    });

    it("runs every call of the other instance's job as a direct call, never as a tick of it", async () => {
      @Module({ imports: lockAppImports(db.url, { appId: 'i50-tick-instance' }), providers: [Exports, Nightly] })
      class TickInstanceModule {}
      const moduleRef = await Test.createTestingModule({ imports: [TickInstanceModule] }).compile();
      const app = await moduleRef.createNestApplication({ logger: false }).init();
      const nightly = app.get(Nightly);
      try {
        await until(() => nightly.answers.length >= 3, 10_000);
        // Each call ran: 1, 2, 3 (a call taken for a tick of the yearly job would run once, then be skipped).
        expect(nightly.answers.slice(0, 3)).toEqual([1, 2, 3]);
        // And none is in the job's run history: no tick of Exports.run came.
        expect(await app.get(LockAdminService).getJobRuns({ job: 'Exports.run' })).toEqual([]);
      } finally {
        await app.close();
      }
    }, 30_000);
  });
}
