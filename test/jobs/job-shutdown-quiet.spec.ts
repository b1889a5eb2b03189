import { ConsoleLogger, Injectable, Module, type Type } from '@nestjs/common';
import { Interval, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { LockAdminService, type LockJobRun, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { createLockApp, type LockApp, lockAppImports } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Runs started, by job. */
const runs = { plain: 0, locked: 0, failing: 0 };

/** A service whose method waits (up to a minute) for a lock another instance holds while the app closes. */
@Injectable()
class Reports {
  @WithLocks({ locks: ['QUIET_DATA_WRITE'], waitMs: 60_000 })
  async render(): Promise<void> {}
}

/** A scheduled method that is no `@WithLocks` job, calling a locked method of another service (the sample's readers). */
@Injectable()
class PlainJobs {
  constructor(private readonly reports: Reports) {}

  @Interval('quiet-plain', 150)
  async tick(): Promise<void> {
    runs.plain++;
    await this.reports.render();
  }
}

/** A `@WithLocks` job whose method calls the same locked method (its tick is claimed, then the call is refused). */
@Injectable()
class LockedJobs {
  constructor(private readonly reports: Reports) {}

  @Interval('quiet-locked', 150)
  @WithLocks('QUIET_JOB_WRITE')
  async run(): Promise<void> {
    runs.locked++;
    await this.reports.render();
  }
}

/** A job that really fails: its error must still be logged, with its stack. */
@Injectable()
class FailingJobs {
  @Interval('quiet-failing', 150)
  async run(): Promise<void> {
    runs.failing++;
    throw new Error('the report server answered 500');
  }
}

/** Everything the application's real console logger writes, line by line (stdout and stderr), while `fn` runs. */
async function captureOutput<T>(lines: string[], fn: () => Promise<T>): Promise<T> {
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((stream) => stream.write);
  for (const stream of streams) {
    stream.write = ((chunk: string | Uint8Array) => {
      lines.push(...String(chunk).split('\n').filter((line) => line.length > 0));
      return true;
    }) as typeof stream.write;
  }
  try {
    return await fn();
  } finally {
    streams.forEach((stream, i) => (stream.write = originals[i]!));
  }
}

/**
 * Boots an application of `providers` (appId `quiet-app`) with Nest's console logger, waits for `ready`, stops every
 * interval (every run counted is then one the shutdown meets, waiting or failed already), closes it; returns what it wrote.
 */
async function closeMidWait(db: TestDatabase, providers: Type[], ready: () => boolean): Promise<string[]> {
  @Module({ imports: lockAppImports(db.url, { appId: 'quiet-app' }), providers })
  class QuietModule {}

  const lines: string[] = [];
  await captureOutput(lines, async () => {
    const moduleRef = await Test.createTestingModule({ imports: [QuietModule] }).compile();
    const app = await moduleRef.createNestApplication({ logger: new ConsoleLogger({ colors: false }) }).init();
    try {
      await until(ready, 20_000);
    } finally {
      const registry = app.get(SchedulerRegistry);
      for (const name of registry.getIntervals()) registry.deleteInterval(name);
      await app.close();
    }
  });
  return lines;
}

for (const dialect of DIALECTS) dialect.describe(`What an operator sees when the app stops mid-wait, on ${dialect.name}`, () => {
  let db: TestDatabase;
  let holder: LockApp;

  beforeAll(async () => {
    db = await dialect.createDatabase();
    holder = await createLockApp(db.url, { appId: 'quiet-holder' });
  });
  afterAll(async () => {
    await holder?.close();
    await db?.drop();
  });

  it('logs one debug line per scheduled run refused a lock at shutdown, no ERROR and no stack; a real failure still logs its error', async () => {
    Object.assign(runs, { plain: 0, locked: 0, failing: 0 });
    // Another instance holds the data lock: every call of Reports.render waits for it.
    const held = await holder.locks.tryLocks(['QUIET_DATA_WRITE']);
    expect(held).toBeGreaterThan(0);

    const lines = await closeMidWait(db, [Reports, PlainJobs, LockedJobs, FailingJobs], () => runs.plain >= 2 && runs.locked === 1 && runs.failing >= 1);
    await holder.locks.releaseLocks(held);

    const errors = lines.filter((line) => / ERROR /.test(line));
    // The real failure, every time it ran: an ERROR line of the schedule module, and its stack.
    expect(errors.length).toBe(runs.failing);
    for (const line of errors) expect(line).toMatch(/ERROR \[Scheduler\] Error: the report server answered 500$/);
    const stackLines = lines.filter((line) => /^\s+at /.test(line));
    expect(stackLines.length).toBeGreaterThan(0);
    // No line of the shutdown's refusals is an error or a stack.
    expect(lines.filter((line) => /LockShutdownError|Waiting for locks was aborted/.test(line))).toEqual([]);
    // Every stack printed is the real failure's: the line above each block of `at` lines is its ERROR line.
    const stackHeads = lines.filter((_, i) => /^\s+at /.test(lines[i + 1] ?? '') && !/^\s+at /.test(lines[i]!));
    expect(stackHeads).toEqual(errors);

    // One quiet line per refused run: each waiting run of the plain method, and the @WithLocks job's claimed run.
    const quiet = lines.filter((line) => /refused because the application is shutting down/.test(line));
    expect(quiet.filter((line) => / DEBUG \[LockJobs\] A run of PlainJobs\.tick ended early: /.test(line))).toHaveLength(runs.plain);
    expect(quiet.filter((line) => / DEBUG \[LockJobs\] quiet-locked tick \S+ ended early: /.test(line))).toHaveLength(1);
    expect(quiet).toHaveLength(runs.plain + 1);

    // The claimed run of the @WithLocks job is no failure in its history: it reads abandoned (its replica stopped).
    const adminSource = new DataSource(
      dialect.name === 'MariaDB' ? { type: 'mariadb', url: db.url, timezone: 'Z' } : { type: 'postgres', url: db.url },
    );
    await adminSource.initialize();
    try {
      const history: LockJobRun[] = await LockAdminService.create(adminSource).getJobRuns({ job: 'quiet-locked', limit: 100 });
      expect(history.filter((run) => run.appId === 'quiet-app').map((run) => run.outcome)).toEqual(['abandoned']);
    } finally {
      await adminSource.destroy();
    }
  }, 60_000);

  it('quiets the refusal in an application without any @WithLocks job too (a scheduled method calling a locked one)', async () => {
    Object.assign(runs, { plain: 0, locked: 0, failing: 0 });
    const held = await holder.locks.tryLocks(['QUIET_DATA_WRITE']);
    const lines = await closeMidWait(db, [Reports, PlainJobs], () => runs.plain >= 2);
    await holder.locks.releaseLocks(held);
    expect(lines.filter((line) => / ERROR |^\s+at /.test(line))).toEqual([]);
    const quiet = lines.filter((line) => / DEBUG \[LockJobs\] A run of PlainJobs\.tick ended early: a lock it asked for was refused/.test(line));
    expect(quiet).toHaveLength(runs.plain);
  }, 60_000);
});
