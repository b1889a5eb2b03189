import { Injectable } from '@nestjs/common';
import { LockAdminService, WithLocks } from 'nestjs-db-locks';
import { Cron, SchedulerRegistry } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLockApp } from '../support/lock-app.js';
import { total } from '../support/otel-sdk.js';
import { useMeteredFleet } from '../support/metered-fleet.js';
import { DIALECTS } from '../support/dialects.js';
import { until } from '../support/until.js';

const M = (name: string) => `nestjs_db_locks.${name}`;

@Injectable()
class MeteredJobs {
  @Cron('* * * * * *', { name: 'metered-report' })
  @WithLocks('METERED_REPORT_WRITE')
  async report(): Promise<void> {}

  @Cron('* * * * * *')
  @WithLocks('METERED_FAILING_WRITE')
  async failing(): Promise<void> {
    throw new Error('down');
  }
}

for (const dialect of DIALECTS) dialect.describe(`metrics of scheduled jobs on ${dialect.name}`, () => {
  const fleet = useMeteredFleet(dialect);
  const { apps } = fleet;

  it('counts ticks by job and outcome on each replica, and reports the age of each job last success', async () => {
    // Two replicas: each tick runs on one, the other counts it skipped (already run elsewhere). A job is named by its
    // schedule's name when it has one.
    for (const appId of ['metered-a', 'metered-b']) apps.push(await createLockApp(fleet.db.url, { appId, reaperIntervalMs: 300 }, 4, [MeteredJobs]));
    const runs = (outcome: string, job = 'metered-report') =>
      fleet.sdk.collect().then((collected) => total(collected, M('job.runs'), { job, outcome }));
    // The replica that comes second finds the locks busy (the run under way) or the tick claimed (run elsewhere).
    const skipped = async () => (await runs('skipped-busy')) + (await runs('skipped-elsewhere'));
    // The failing job's ticks are counted as their runs end, each in its own time: waited for too (on a loaded CI the
    // report's third success came before the failing job's third failure).
    const failures = () => runs('failed', 'MeteredJobs.failing');
    await until(async () => (await runs('succeeded')) >= 3 && (await skipped()) >= 3 && (await failures()) >= 3, 15_000);
    const collected = await fleet.sdk.collect();
    expect(total(collected, M('job.runs'), { job: 'MeteredJobs.failing', outcome: 'failed' })).toBeGreaterThanOrEqual(3);
    expect(total(collected, M('job.runs'), { job: 'MeteredJobs.failing', outcome: 'succeeded' })).toBe(0);
    // The gauge: seconds since the last success anywhere in the fleet (never for the failing job: no point at all).
    const ages = (collected.get(M('job.last_success.age')) ?? []).filter((point) => point.attributes.job === 'metered-report');
    expect(ages.length).toBeGreaterThanOrEqual(1);
    for (const age of ages) expect(age.value).toBeLessThan(2.5);
    expect(ages.map((age) => age.attributes['app.id'])).toEqual(expect.arrayContaining(['metered-a']));
    expect((collected.get(M('job.last_success.age')) ?? []).some((point) => point.attributes.job === 'MeteredJobs.failing')).toBe(false);
    // While the job does not succeed, the age grows.
    await Promise.all(apps.splice(1).map((app) => app.close()));
    await apps[0]!.app.get(SchedulerRegistry).getCronJob('metered-report').stop();
    await sleep(1500);
    const after = total(await fleet.sdk.collect(), M('job.last_success.age'), { job: 'metered-report', 'app.id': 'metered-a' });
    expect(after).toBeGreaterThan(1.4);
  });

  it('counts the ticks found paused and the "run now" runs apart, by job and outcome', async () => {
    const app = await createLockApp(fleet.db.url, { appId: 'metered-controls' }, 4, [MeteredJobs]);
    apps.push(app);
    const admin = app.app.get(LockAdminService);
    // Across the two replicas of this process (metered-a still runs the job's ticks).
    const count = (name: string, outcome: string) =>
      fleet.sdk.collect().then((collected) => total(collected, M(name), { job: 'MeteredJobs.failing', outcome }));
    await admin.pauseJob('MeteredJobs.failing', { actor: 'ops', reason: 'noisy' });
    await until(async () => (await count('job.runs', 'paused')) >= 2, 5000);
    const failedWhilePaused = await count('job.runs', 'failed');
    await admin.runJobNow('MeteredJobs.failing', { actor: 'ops', reason: 'check the fix' });
    await until(async () => (await count('job.manual_runs', 'failed')) === 1, 5000);
    await sleep(1500); // the other replica looked for the request again: counted once
    // The manual run is not a tick: the ticks' counter did not move.
    expect(await count('job.manual_runs', 'failed')).toBe(1);
    expect(await count('job.runs', 'failed')).toBe(failedWhilePaused);
    await admin.resumeJob('MeteredJobs.failing', { actor: 'ops', reason: 'done' });
  });
});
