import { Injectable, Logger, type LoggerService, type LogLevel, Module, type Type } from '@nestjs/common';
import { Cron, SchedulerRegistry, Timeout } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { type LockJobRun, LockService, WithLocks } from 'nestjs-db-locks';
import { DIALECTS } from '../support/dialects.js';
import { lockAppImports } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** Runs of the slow job: started and ended. */
const slow = { started: 0, ended: 0 };

@Injectable()
class ShutdownJobs {
  @Cron('* * * * * *', { name: 'slow-job' })
  @WithLocks('SHUTDOWN_JOB_WRITE')
  async run(): Promise<void> {
    slow.started++;
    await sleep(1200);
    slow.ended++;
  }
}

@Injectable()
class PrunedJobs {
  @Cron('* * * * * *')
  @WithLocks('PRUNED_JOB_WRITE')
  async run(): Promise<void> {}
}

/** Runs of the shared job under way, and the most at once. */
const shared = { running: 0, most: 0, runs: 0 };

@Injectable()
class SharedJobs {
  /** A read lock with 5 permits: the locks alone would let its runs overlap. */
  @Cron('* * * * * *')
  @WithLocks('SHARED_REPORT_READ')
  async run(): Promise<void> {
    shared.runs++;
    shared.most = Math.max(shared.most, ++shared.running);
    await sleep(2200);
    shared.running--;
  }
}

@Injectable()
class SkewedJobs {
  @Cron('* * * * * *')
  @WithLocks('SKEWED_WRITE')
  async run(): Promise<void> {}
}

@Injectable()
class DirectJobs {
  runs = 0;

  /** Once a year: the test calls it directly. */
  @Cron('0 0 0 1 1 *')
  @WithLocks('DIRECT_JOB_WRITE')
  async run(): Promise<number> {
    return ++this.runs;
  }
}

@Injectable()
class UnmigratedJobs {
  runs = 0;

  @Cron('* * * * * *')
  @WithLocks('UNMIGRATED_JOB_WRITE')
  async run(): Promise<void> {
    this.runs++;
  }
}

/** Runs of the start-up task, by replica. */
const started: string[] = [];

@Injectable()
class StartupJobs {
  constructor(private readonly locks: LockService) {}

  @Timeout(200)
  @WithLocks('STARTUP_TASK_WRITE')
  async run(): Promise<void> {
    started.push(this.locks.appId);
  }
}

/** Every line logged, with its level and context. */
interface Line {
  readonly level: string;
  readonly message: string;
}

async function boot(
  url: string,
  provider: Type,
  options: Record<string, number>,
  appId = `lifecycle-${provider.name}`,
  logger: LoggerService | LogLevel[] = ['error', 'warn', 'log', 'debug'],
) {
  @Module({ imports: lockAppImports(url, { appId, ...options }), providers: [provider] })
  class LifecycleModule {}
  const moduleRef = await Test.createTestingModule({ imports: [LifecycleModule] }).compile();
  return moduleRef.createNestApplication({ logger }).init();
}

/** The rows of a job's history, newest first. */
async function historyOf(db: TestDatabase, job: string): Promise<Array<Pick<LockJobRun, 'outcome'> & { tick_age_ms: number }>> {
  return db.query(
    db.url.startsWith('mysql:')
      ? 'SELECT outcome, TIMESTAMPDIFF(MICROSECOND, tick, UTC_TIMESTAMP(6)) / 1000 AS tick_age_ms FROM locking_job_run WHERE job = $1 ORDER BY tick DESC'
      : 'SELECT outcome, (extract(epoch FROM clock_timestamp() - tick) * 1000)::float8 AS tick_age_ms FROM locking_job_run WHERE job = $1 ORDER BY tick DESC',
    [job],
  );
}

for (const dialect of DIALECTS) {
  dialect.describe(`Scheduled jobs at shutdown and the history's bounds, on ${dialect.name}`, () => {
    let db: TestDatabase;
    const lines: Line[] = [];
    const capture: LoggerService = {
      log: (message: string) => void lines.push({ level: 'log', message: String(message) }),
      error: (message: unknown) => void lines.push({ level: 'error', message: String(message) }),
      warn: (message: string) => void lines.push({ level: 'warn', message: String(message) }),
      debug: (message: string) => void lines.push({ level: 'debug', message: String(message) }),
    };

    beforeAll(async () => {
      db = await dialect.createDatabase();
    });
    afterAll(async () => {
      Logger.overrideLogger(false);
      await db.drop();
    });

    it('skips a tick that fires after app.close() began with one debug line, and lets the run under way end', async () => {
      Object.assign(slow, { started: 0, ended: 0 });
      const app = await boot(db.url, ShutdownJobs, {});
      Logger.overrideLogger(capture);
      await until(() => slow.started === 1, 10_000);
      const job = app.get(SchedulerRegistry).getCronJob('slow-job');
      // The next ticks come from the test only: exactly one fires after close() began.
      await job.stop();
      lines.length = 0;
      const closing = app.close();
      await sleep(100);
      // From a timer, as the schedule module fires it (a direct call of the method is no tick).
      await new Promise<void>((resolve) => setTimeout(() => void job.fireOnTick().then(resolve), 0));
      await closing;
      Logger.overrideLogger(false);
      expect(slow).toEqual({ started: 1, ended: 1 });
      expect(lines.filter((line) => line.level === 'error' || line.level === 'warn')).toEqual([]);
      // The job's identity is its schedule's own name.
      expect(lines.filter((line) => /Skipped a tick of slow-job/.test(line.message))).toEqual([
        { level: 'debug', message: 'Skipped a tick of slow-job: the application is shutting down' },
      ]);
      // The run under way recorded its end before the pool closed.
      expect((await historyOf(db, 'slow-job')).map((row) => row.outcome)).toEqual(['succeeded']);
    });

    it('never overlaps two runs of a job, even when its locks would let them (a read lock with 5 permits)', async () => {
      await db.query(
        dialect.name === 'MariaDB'
          ? "INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ('SHARED_REPORT', 'R', 5)"
          : "INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ('SHARED_REPORT', 'R', 5)",
      );
      Object.assign(shared, { running: 0, most: 0, runs: 0 });
      const apps = [await boot(db.url, SharedJobs, {}), await boot(db.url, SharedJobs, {}, 'shared-b')];
      try {
        await until(() => shared.runs >= 2, 15_000);
      } finally {
        await Promise.all(apps.map((app) => app.close()));
      }
      expect(shared.most).toBe(1);
      const rows = await historyOf(db, 'SharedJobs.run');
      expect(rows.filter((row) => row.outcome === 'skipped').length).toBeGreaterThanOrEqual(1);
    });

    it('warns, once, when a replica clock is further from the database than a third of the period', async () => {
      const app = await boot(db.url, SkewedJobs, {});
      const realNow = Date.now;
      lines.length = 0;
      Logger.overrideLogger(capture);
      // This replica's clock jumps 600 ms ahead: beyond the 333 ms of a one-second schedule.
      Date.now = () => realNow() + 600;
      try {
        await until(async () => (await historyOf(db, 'SkewedJobs.run')).length >= 3, 10_000);
      } finally {
        Date.now = realNow;
        Logger.overrideLogger(false);
        await app.close();
      }
      const warnings = lines.filter((line) => line.level === 'warn');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toMatch(/^SkewedJobs\.run: this replica's clock is \d+ ms ahead of the database's, beyond the ±333 ms/);
    });

    it('runs a direct call of a scheduled method (a "run now") under its locks, as no tick: each call runs', async () => {
      const app = await boot(db.url, DirectJobs, {});
      try {
        const jobs = app.get(DirectJobs);
        expect(await jobs.run()).toBe(1);
        expect(await jobs.run()).toBe(2);
        expect(await historyOf(db, 'DirectJobs.run')).toEqual([]);
      } finally {
        await app.close();
      }
    });

    it('keeps running jobs under their locks, with one warning, on a database not migrated to the run history', async () => {
      const old = await dialect.createDatabase();
      await old.query('DROP TABLE locking_job');
      await old.query('DROP TABLE locking_job_run');
      lines.length = 0;
      const app = await boot(old.url, UnmigratedJobs, { reaperIntervalMs: 300 }, 'unmigrated', capture);
      try {
        await until(() => app.get(UnmigratedJobs).runs >= 2, 10_000);
      } finally {
        await app.close();
        Logger.overrideLogger(false);
        await old.drop();
      }
      expect(lines.filter((line) => line.level === 'error')).toEqual([]);
      const warnings = lines.filter((line) => line.level === 'warn' && /run history of scheduled jobs/.test(line.message));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toContain('run the lock migrations');
    });

    it('runs a @Timeout job on every replica that starts, each in its own history', async () => {
      started.length = 0;
      const apps = [await boot(db.url, StartupJobs, {}, 'startup-a'), await boot(db.url, StartupJobs, {}, 'startup-b')];
      try {
        await until(async () => (await historyOf(db, 'StartupJobs.run@startup-b')).length === 1, 10_000);
        await until(async () => (await historyOf(db, 'StartupJobs.run@startup-a')).length === 1, 10_000);
      } finally {
        await Promise.all(apps.map((app) => app.close()));
      }
      expect(started.sort()).toEqual(['startup-a', 'startup-b']);
      expect((await historyOf(db, 'StartupJobs.run@startup-a')).map((row) => row.outcome)).toEqual(['succeeded']);
    });

    it('prunes the history older than logRetentionMs on the reaper task, and keeps the last success', async () => {
      const app = await boot(db.url, PrunedJobs, { logRetentionMs: 1500, reaperIntervalMs: 250 });
      try {
        await until(async () => (await historyOf(db, 'PrunedJobs.run')).length >= 1, 10_000);
        await sleep(4500);
        const rows = await historyOf(db, 'PrunedJobs.run');
        // Ticks of the last 1.5 s, and what a reaper run 250 ms ago had not pruned yet: never the 4 or 5 ticks run.
        expect(rows.length).toBeGreaterThanOrEqual(1);
        expect(rows.length).toBeLessThanOrEqual(3);
        for (const row of rows) expect(Number(row.tick_age_ms)).toBeLessThan(1500 + 250 + 500);
        const [job] = await db.query<{ last_succeeded: unknown }>('SELECT last_succeeded FROM locking_job WHERE job = $1', [
          'PrunedJobs.run',
        ]);
        expect(job!.last_succeeded).not.toBeNull();
      } finally {
        await app.close();
      }
    });
  });
}
