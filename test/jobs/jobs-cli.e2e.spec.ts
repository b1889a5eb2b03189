import { Injectable, Module } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import type { INestApplicationContext } from '@nestjs/common';
import { type LockJobInfo, type LockJobRun, WithLocks } from 'nestjs-db-locks';
import { runCli } from '../support/cli-process.js';
import { DIALECTS } from '../support/dialects.js';
import { lockAppImports } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

@Injectable()
class CliJobs {
  @Cron('* * * * * *')
  @WithLocks('CLI_REPORT_WRITE')
  async report(): Promise<void> {}

  @Cron('* * * * * *')
  @WithLocks('CLI_FAILING_WRITE')
  async failing(): Promise<void> {
    throw new TypeError('no such account');
  }
}

for (const dialect of DIALECTS) {
  dialect.describe(`nestjs-db-locks jobs, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let app: INestApplicationContext;
    let env: Record<string, string>;

    beforeAll(async () => {
      db = await dialect.createDatabase();
      env = { DATABASE_URL: db.url };
      @Module({ imports: lockAppImports(db.url, { appId: 'cli-jobs' }), providers: [CliJobs] })
      class CliJobsModule {}
      const moduleRef = await Test.createTestingModule({ imports: [CliJobsModule] }).compile();
      moduleRef.useLogger(false);
      app = await moduleRef.init();
      await until(async () => (await db.query("SELECT job FROM locking_job_run WHERE outcome <> 'running'")).length >= 4, 10_000);
      await app.close();
    });
    afterAll(async () => {
      await db?.drop();
    });

    it('lists each job with its schedule, next tick, last success and last run', async () => {
      const text = await runCli(['jobs'], env);
      expect(text).toMatchObject({ code: 0, stderr: '' });
      expect(text.stdout).toMatch(/^\s*JOB\s+SCHEDULE\s+NEXT TICK\s+LAST SUCCESS\s+LAST TICK\s+OUTCOME\s+APP\s+PAUSED$/m);
      expect(text.stdout).toMatch(/^CliJobs\.report\s+cron \* \* \* \* \* \*\s+\S+ \S+\s+\d+\.\d s ago\s+\S+ \S+\s+succeeded\s+cli-jobs\s+-$/m);
      expect(text.stdout).toMatch(/^CliJobs\.failing\s+cron \* \* \* \* \* \*\s+\S+ \S+\s+never\s+\S+ \S+\s+failed \(TypeError\)\s+cli-jobs\s+-$/m);
      const json = await runCli(['jobs', '--json'], env);
      const jobs = JSON.parse(json.stdout) as LockJobInfo[];
      expect(jobs.map((job) => job.job)).toEqual(['CliJobs.failing', 'CliJobs.report']);
      expect(jobs[1]).toMatchObject({ schedule: 'cron * * * * * *', lastRuns: expect.any(Array) });
      expect(jobs[1]!.lastSucceededAgeSeconds).toBeGreaterThan(0);
    });

    it('shows a job run history with --job, newest tick first, and --limit bounds it', async () => {
      const json = await runCli(['jobs', '--job', 'CliJobs.failing', '--limit', '2', '--json'], env);
      expect(json.code).toBe(0);
      const runs = JSON.parse(json.stdout) as LockJobRun[];
      expect(runs).toHaveLength(2);
      expect(runs[0]).toMatchObject({ job: 'CliJobs.failing', outcome: 'failed', error: 'TypeError', appId: 'cli-jobs' });
      expect(new Date(runs[0]!.tick).getTime()).toBeGreaterThan(new Date(runs[1]!.tick).getTime());
      const text = await runCli(['jobs', '--job', 'CliJobs.report'], env);
      expect(text.stdout).toMatch(/^\s*TICK\s+JOB\s+OUTCOME\s+APP\s+STAMP\s+DURATION\s+SKIPPED\s+BY$/m);
      expect(text.stdout).toMatch(/^\S+ \S+\s+CliJobs\.report\s+succeeded\s+cli-jobs\s+\d+\s+\d+\.\d s\s+-\s+-$/m);
      const none = await runCli(['jobs', '--job', 'Nope.run'], env);
      expect(none).toMatchObject({ code: 0, stdout: 'No run matches.\n' });
    });

    it('pauses, resumes and runs a job now with --actor and --reason, each recorded with who and why', async () => {
      const paused = await runCli(['jobs', 'pause', 'CliJobs.report', '--actor', 'alice', '--reason', 'month end'], env);
      expect(paused).toMatchObject({ code: 0, stderr: '' });
      expect(paused.stdout).toContain('Paused CliJobs.report on every replica.\nRecorded: pause by alice: month end');
      const listed = await runCli(['jobs'], env);
      expect(listed.stdout).toMatch(/^CliJobs\.report\s.*\sby alice: month end$/m);
      const again = await runCli(['jobs', 'pause', 'CliJobs.report', '--actor', 'bob', '--reason', 'again'], env);
      expect(again.stdout).toContain('CliJobs.report was paused already: nothing changed');
      const resumed = await runCli(['jobs', 'resume', 'CliJobs.report', '--actor', 'carol', '--reason', 'done', '--json'], env);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ job: 'CliJobs.report', action: 'resume', actor: 'carol', reason: 'done', changed: true });
      const run = await runCli(['jobs', 'run', 'CliJobs.report', '--actor', 'dave', '--reason', 'import fixed'], env);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^Requested a run of CliJobs\.report \(tick \S+ \S+\)/);
      // No replica runs here: the request waits, recorded with who and why.
      const runs = JSON.parse((await runCli(['jobs', '--job', 'CliJobs.report', '--limit', '1', '--json'], env)).stdout) as LockJobRun[];
      expect(runs[0]).toMatchObject({ outcome: 'requested', manual: true, actor: 'dave', reason: 'import fixed', appId: null });
      const history = await runCli(['jobs', '--job', 'CliJobs.report', '--limit', '1'], env);
      expect(history.stdout).toMatch(/requested\s.*run now by dave: import fixed$/m);
    });

    it('answers an unknown job with exit code 1, and a missing actor or a reason too long with 2', async () => {
      const unknown = await runCli(['jobs', 'pause', 'Nope.run', '--actor', 'a', '--reason', 'r'], env);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('No scheduled job "Nope.run" is registered');
      const noActor = await runCli(['jobs', 'run', 'CliJobs.report', '--reason', 'r'], env);
      expect(noActor.code).toBe(2);
      expect(noActor.stderr).toContain("required option '--actor <who>' not specified");
      const long = await runCli(['jobs', 'resume', 'CliJobs.report', '--actor', 'a', '--reason', 'r'.repeat(501)], {
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      });
      expect(long.code).toBe(2);
      expect(long.stderr).toContain('--reason must be 1-500 characters');
    });

    it('refuses a bad option with exit code 2 before connecting', async () => {
      const bad = await runCli(['jobs', '--limit', '0'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("invalid limit '0'");
    });
  });
}
