import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { JobNotFoundError, LockAdminService, type LockJobAction, type LockJobControl, type LockJobRun } from 'nestjs-db-locks';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import { createLockApp } from '../support/lock-app.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { createHitsTable, dbNowMs, type Hit, hitsOf, mostAtOnce, type Replica, startReplica, stopReplicas } from './support/job-fleet.js';

/** How long one run of SlowCron takes (ms): its runs overrun the one-second schedule, so one is nearly always going. */
const SLOW_MS = 1500;
/**
 * How long one run of SharedCron takes (ms): three polls for requests (one a second) fall within it, so a "run now" that
 * did not wait for it would overlap it.
 */
const SHARED_MS = 3000;

/** The jobs of every replica. */
const JOBS = 'FleetCron,SlowCron,SharedCron,PerReplicaCron';

/** An admin service over a DataSource of its own (as the command line makes one). */
async function adminOf(db: TestDatabase, dialect: TestDialect): Promise<{ admin: LockAdminService; source: DataSource }> {
  const source = new DataSource(
    dialect.name === 'MariaDB' ? { type: 'mariadb', url: db.url, timezone: 'Z' } : { type: 'postgres', url: db.url },
  );
  await source.initialize();
  return { admin: LockAdminService.create(source), source };
}

/**
 * The controls of scheduled jobs from the fleet's side: three replica processes run `FleetCron.run` (every second, 20
 * ms) and `SlowCron.run` (every second, 1.5 s: a run is nearly always going); an operator pauses, resumes and runs
 * them through `LockAdminService`, and `job_hits` (written by the jobs themselves) shows where and when they ran.
 */
for (const dialect of DIALECTS) {
  dialect.describe(`Controls of scheduled jobs on a fleet of replicas, on ${dialect.name}`, () => {
    let db: TestDatabase;
    let admin: LockAdminService;
    let source: DataSource;
    const replicas: Replica[] = [];

    beforeAll(async () => {
      db = await dialect.createDatabase();
      await createHitsTable(db, dialect);
      // SharedCron's read lock admits two holders: its locks alone would let a "run now" overlap a scheduled run.
      await db.query("INSERT INTO locking_permissions (lock_name, mode, permits) VALUES ('SHARED_CRON', 'R', 2)");
      for (const appId of ['replica-a', 'replica-b', 'replica-c']) {
        replicas.push(await startReplica(db.url, appId, 0, { JOBS, SLOW_MS: String(SLOW_MS), SHARED_MS: String(SHARED_MS) }));
      }
      ({ admin, source } = await adminOf(db, dialect));
      // Registered by every replica, and run at least once.
      await until(async () => (await hitsOf(db, 'fleet-cron')).length > 0 && (await hitsOf(db, 'slow-cron')).length > 0, 20_000);
      await until(async () => (await hitsOf(db, 'shared-cron')).length > 0, 20_000);
    }, 90_000);

    afterAll(async () => {
      await stopReplicas(replicas);
      await source?.destroy();
      await db?.drop();
    });

    /** Waits until the run that `asked` (a "run now") requested of `job` succeeded; returns it. */
    async function requestedRun(job: string, asked: LockJobAction, timeoutMs: number): Promise<LockJobRun> {
      const tick = asked.tick!.getTime();
      let run: LockJobRun | undefined;
      await until(async () => {
        run = (await admin.getJobRuns({ job, since: asked.tick!, limit: 50 })).find((r) => r.tick.getTime() === tick);
        return run?.outcome === 'succeeded';
      }, timeoutMs);
      return run!;
    }

    /**
     * Once a scheduled run of `job` (hits under `name`) is going, asks for a run now and waits until it succeeded; checks
     * that it started after the run under way had ended, and that no two runs of the job ever overlapped.
     */
    async function runNowWhileRunning(job: string, name: string, control: LockJobControl): Promise<LockJobRun> {
      let going: Hit | undefined;
      await until(async () => {
        const hits = await hitsOf(db, name);
        going = hits[hits.length - 1];
        return going?.phase === 'start';
      }, 10_000);
      const asked = await admin.runJobNow(job, control);
      const run = await requestedRun(job, asked, 30_000);
      const hits = await hitsOf(db, name);
      const goingEnd = hits.find((hit) => hit.phase === 'end' && hit.appId === going!.appId && hit.dbMs >= going!.dbMs);
      expect(goingEnd!.dbMs).toBeLessThanOrEqual(run.startedAt!.getTime());
      expect(mostAtOnce(hits)).toBe(1);
      return run;
    }

    it('pauses a job on every replica: its ticks are recorded paused with who and why, it runs nowhere, and resumes', async () => {
      const paused = await admin.pauseJob('FleetCron.run', { actor: 'alice', reason: 'maintenance window' });
      expect(paused).toMatchObject({ job: 'FleetCron.run', action: 'pause', actor: 'alice', reason: 'maintenance window', changed: true });
      const pausedAt = paused.at.getTime();
      // Pausing again changes nothing.
      expect(await admin.pauseJob('FleetCron.run', { actor: 'bob', reason: 'again' })).toMatchObject({ changed: false });
      const info = (await admin.getJobs({ runs: 0 })).find((job) => job.job === 'FleetCron.run');
      expect(info!.paused).toMatchObject({ actor: 'alice', reason: 'maintenance window' });
      // A replica started while the job is paused obeys the pause too (it is in the database).
      replicas.push(await startReplica(db.url, 'replica-d', 0, { JOBS, SLOW_MS: String(SLOW_MS), SHARED_MS: String(SHARED_MS) }));
      await sleep(4500);
      const runs = await admin.getJobRuns({ job: 'FleetCron.run', since: new Date(pausedAt + 1000), limit: 100 });
      // Four ticks or so, each recorded once, paused, by whoever came first; none ran.
      expect(runs.length).toBeGreaterThanOrEqual(3);
      for (const run of runs) {
        expect(run).toMatchObject({ outcome: 'paused', actor: 'alice', reason: 'maintenance window', manual: false, appId: null });
      }
      const ranSince = (await hitsOf(db, 'fleet-cron')).filter((hit) => hit.dbMs > pausedAt + 1000);
      expect(ranSince).toEqual([]);

      const resumed = await admin.resumeJob('FleetCron.run', { actor: 'carol', reason: 'window over' });
      expect(resumed).toMatchObject({ action: 'resume', changed: true });
      const resumedAt = resumed.at.getTime();
      // The next tick runs, once.
      await until(async () => (await hitsOf(db, 'fleet-cron')).some((hit) => hit.dbMs > resumedAt), 5000);
      await sleep(1500);
      // The ticks named after the resume (one or two) all ran.
      const after = await admin.getJobRuns({ job: 'FleetCron.run', since: new Date(resumedAt + 1), limit: 10 });
      expect(after.length).toBeGreaterThanOrEqual(1);
      expect(after.every((run) => run.outcome === 'succeeded')).toBe(true);
      expect((await admin.getJobs({ runs: 0 })).find((job) => job.job === 'FleetCron.run')!.paused).toBeNull();
      const actions = await admin.getJobActions({ job: 'FleetCron.run' });
      expect(actions.map(({ action, actor, reason }) => ({ action, actor, reason }))).toEqual([
        { action: 'resume', actor: 'carol', reason: 'window over' },
        { action: 'pause', actor: 'alice', reason: 'maintenance window' },
      ]);
    }, 30_000);

    it('records the ticks of a paused job paused when its locks are held elsewhere (every replica finds them busy)', async () => {
      // Every replica counts the tick from a failed acquisition, never from a claim under the locks: a tick named by
      // the clock after the holder of the locks had claimed another was once left `skipped` while the job was paused.
      const outsider = await createLockApp(db.url, { appId: 'fleet-outsider' });
      try {
        await admin.pauseJob('FleetCron.run', { actor: 'erin', reason: 'locks held by an operator' });
        const grant = (await outsider.locks.acquireLocks(['FLEET_CRON_WRITE'], { waitMs: 5000 }))!;
        const heldAt = await dbNowMs(db, dialect);
        await sleep(3500);
        const runs = await admin.getJobRuns({ job: 'FleetCron.run', since: new Date(heldAt + 1000), limit: 100 });
        await grant.release();
        expect(runs.length).toBeGreaterThanOrEqual(2);
        for (const run of runs) {
          expect(run).toMatchObject({ outcome: 'paused', actor: 'erin', reason: 'locks held by an operator', appId: null });
        }
        // None ran while the outsider held the locks (a run claimed before the pause had ended: it held them).
        expect((await hitsOf(db, 'fleet-cron')).filter((hit) => hit.dbMs > heldAt)).toEqual([]);
      } finally {
        await admin.resumeJob('FleetCron.run', { actor: 'erin', reason: 'done' });
        await outsider.close();
      }
    }, 30_000);

    it('runs a job once across the fleet on "run now", recorded as manual with its actor and reason', async () => {
      const asked = await admin.runJobNow('FleetCron.run', { actor: 'dave', reason: 'rebuild after import' });
      expect(asked).toMatchObject({ action: 'run', actor: 'dave', changed: true });
      const run = await requestedRun('FleetCron.run', asked, 10_000);
      const tick = asked.tick!.getTime();
      expect(run).toMatchObject({ manual: true, actor: 'dave', reason: 'rebuild after import', error: null });
      // Picked up within about a second (each replica looks every second), when nothing else runs.
      expect(run.startedAt!.getTime() - tick).toBeLessThan(2000);
      expect(['replica-a', 'replica-b', 'replica-c', 'replica-d']).toContain(run.appId);
      // Exactly one run started by the request's replica within its run (the schedule's own ticks are elsewhere in time).
      const started = run.startedAt!.getTime();
      const hits = (await hitsOf(db, 'fleet-cron')).filter(
        (hit) => hit.phase === 'start' && hit.appId === run.appId && hit.dbMs >= started - 5 && hit.dbMs <= started + 20,
      );
      expect(hits).toHaveLength(1);
    }, 30_000);

    it('runs it once, after the scheduled run under way, never overlapping it, when asked while a tick of it runs', async () => {
      // A scheduled run of SlowCron is going: its start is recorded, not its end.
      const run = await runNowWhileRunning('SlowCron.run', 'slow-cron', { actor: 'erin', reason: 'while it runs' });
      expect(run).toMatchObject({ manual: true, actor: 'erin', reason: 'while it runs' });
    }, 60_000);

    it('never overlaps a run going under shared locks that admit both: the request waits for it', async () => {
      const run = await runNowWhileRunning('SharedCron.run', 'shared-cron', { actor: 'frank', reason: 'shared' });
      expect(run).toMatchObject({ manual: true, actor: 'frank', reason: 'shared' });
    }, 60_000);

    it('pauses and runs a per-replica job on its own replica only (named `Class.method@appId`, as listed)', async () => {
      const job = 'PerReplicaCron.run@replica-b';
      const listed = (await admin.getJobs({ runs: 0 })).map((info) => info.job);
      expect(listed).toEqual(expect.arrayContaining(['PerReplicaCron.run@replica-a', job, 'PerReplicaCron.run@replica-c']));
      const paused = await admin.pauseJob(job, { actor: 'gina', reason: 'replica-b cache rebuild' });
      const pausedAt = paused.at.getTime();
      await sleep(4500);
      const since = pausedAt + 1000;
      const ranSince = (await hitsOf(db, 'per-replica-cron')).filter((hit) => hit.phase === 'start' && hit.dbMs > since);
      // replica-b runs it nowhere; the other replicas go on running their own.
      expect(ranSince.filter((hit) => hit.appId === 'replica-b')).toEqual([]);
      for (const other of ['replica-a', 'replica-c']) expect(ranSince.filter((hit) => hit.appId === other).length).toBeGreaterThanOrEqual(2);
      const runs = await admin.getJobRuns({ job, since: new Date(since), limit: 100 });
      expect(runs.length).toBeGreaterThanOrEqual(2);
      for (const run of runs) expect(run).toMatchObject({ outcome: 'paused', actor: 'gina', manual: false });
      const othersRuns = await admin.getJobRuns({ job: 'PerReplicaCron.run@replica-a', since: new Date(since), limit: 100 });
      expect(othersRuns.length).toBeGreaterThanOrEqual(2);
      expect(othersRuns.every((run) => run.outcome === 'succeeded')).toBe(true);

      // Run now, while paused: once, on replica-b.
      const asked = await admin.runJobNow(job, { actor: 'gina', reason: 'one run while paused' });
      const run = await requestedRun(job, asked, 10_000);
      expect(run).toMatchObject({ manual: true, appId: 'replica-b', actor: 'gina' });
      const onB = (await hitsOf(db, 'per-replica-cron')).filter((hit) => hit.phase === 'start' && hit.appId === 'replica-b' && hit.dbMs > since);
      expect(onB).toHaveLength(1);

      expect(await admin.resumeJob(job, { actor: 'gina', reason: 'rebuilt' })).toMatchObject({ changed: true });
      const resumedAt = Date.now();
      await until(async () => (await hitsOf(db, 'per-replica-cron')).some((hit) => hit.appId === 'replica-b' && hit.localMs > resumedAt), 5000);
    }, 30_000);

    it('refuses an unknown job, an empty actor and a reason too long, changing nothing', async () => {
      const before = await db.query<{ n: string | number }>('SELECT COUNT(*) AS n FROM locking_job_action');
      await expect(admin.pauseJob('NoSuch.job', { actor: 'x', reason: 'y' })).rejects.toBeInstanceOf(JobNotFoundError);
      await expect(admin.runJobNow('NoSuch.job', { actor: 'x', reason: 'y' })).rejects.toBeInstanceOf(JobNotFoundError);
      await expect(admin.pauseJob('FleetCron.run', { actor: ' ', reason: 'y' })).rejects.toMatchObject({ name: 'InvalidLockArgumentError', argument: 'actor' });
      await expect(admin.runJobNow('FleetCron.run', { actor: 'x', reason: 'r'.repeat(501) })).rejects.toMatchObject({
        name: 'InvalidLockArgumentError',
        argument: 'reason',
      });
      const after = await db.query<{ n: string | number }>('SELECT COUNT(*) AS n FROM locking_job_action');
      expect(Number(after[0]!.n)).toBe(Number(before[0]!.n));
      expect((await admin.getJobs({ runs: 0 })).find((job) => job.job === 'FleetCron.run')!.paused).toBeNull();
    });

    it('stops with every run counted: each start of a job is a claimed run of its history (none ran twice)', async () => {
      await stopReplicas(replicas);
      const since = new Date((await dbNowMs(db, dialect)) - 600_000);
      for (const [job, name] of [
        ['FleetCron.run', 'fleet-cron'],
        ['SlowCron.run', 'slow-cron'],
        ['SharedCron.run', 'shared-cron'],
      ] as const) {
        const claimed = (await admin.getJobRuns({ job, since, limit: 10_000 })).filter((run) => run.stamp !== null);
        const starts = (await hitsOf(db, name)).filter((hit) => hit.phase === 'start');
        expect(starts.length).toBe(claimed.length);
        expect(claimed.filter((run) => run.manual)).toHaveLength(1);
      }
    }, 30_000);
  });
}
