import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { type LockJobAction, type LockJobInfo, WithLocks } from 'nestjs-db-locks';
import { createLockApp, type LockApp } from '../support/lock-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';
import { call, type SampleInstance, startSampleInstance } from './support/sample-instance.js';

/** How many times the job below ran on its instance. */
let reports = 0;

/** A scheduled job of another instance of the fleet, which the console controls. */
@Injectable()
class ControlledJobs {
  @Cron('* * * * * *')
  @WithLocks('CONTROLLED_REPORT_WRITE')
  async report(): Promise<void> {
    reports++;
  }
}

/** The job's row of `GET /api/jobs`. */
async function jobRow(app: SampleInstance): Promise<LockJobInfo> {
  const jobs = await call<LockJobInfo[]>(`${app.baseUrl}/api/jobs`);
  return jobs.body.find((job) => job.job === 'ControlledJobs.report')!;
}

/** The console's HTTP edge of the job controls: `POST /api/jobs/:job/pause|resume|run`. */
describe('sample app: POST /api/jobs/:job/pause|resume|run', () => {
  let db: TestDatabase;
  let app: SampleInstance;
  let jobs: LockApp;
  const url = (job: string, action: string) => `${app.baseUrl}/api/jobs/${encodeURIComponent(job)}/${action}`;

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
    app = await startSampleInstance(db.url, { appId: 'console-controls' });
    jobs = await createLockApp(db.url, { appId: 'controlled' }, 4, [ControlledJobs]);
    await until(async () => (await jobRow(app)) !== undefined && reports > 0, 8000);
  });
  afterAll(async () => {
    await jobs?.close();
    await app?.close();
    await db?.drop();
  });

  it('pauses a job with who and why (shown by GET /api/jobs and the history), then resumes it', async () => {
    const paused = await call<LockJobAction>(url('ControlledJobs.report', 'pause'), { actor: 'ops-anna', reason: 'bad data upstream' });
    expect(paused).toMatchObject({ status: 200, body: { job: 'ControlledJobs.report', action: 'pause', actor: 'ops-anna', changed: true } });
    expect((await jobRow(app)).paused).toMatchObject({ actor: 'ops-anna', reason: 'bad data upstream' });
    const ranBefore = reports;
    await until(async () => (await jobRow(app)).lastRuns.filter((run) => run.outcome === 'paused').length >= 2, 5000);
    expect((await jobRow(app)).lastRuns[0]).toMatchObject({ outcome: 'paused', actor: 'ops-anna', reason: 'bad data upstream' });
    expect(reports - ranBefore).toBeLessThanOrEqual(1); // at most a tick claimed before the pause
    const resumed = await call<LockJobAction>(url('ControlledJobs.report', 'resume'), { actor: 'ops-anna', reason: 'fixed' });
    expect(resumed).toMatchObject({ status: 200, body: { action: 'resume', changed: true } });
    const resumedAt = reports;
    await until(() => reports > resumedAt, 5000);
    expect((await jobRow(app)).paused).toBeNull();
  });

  it('runs a job now, recorded as manual with who and why', async () => {
    const asked = await call<LockJobAction & { tick: string }>(url('ControlledJobs.report', 'run'), { actor: 'ops-ben', reason: 'rerun' });
    expect(asked).toMatchObject({ status: 200, body: { action: 'run', actor: 'ops-ben', reason: 'rerun', changed: true } });
    await until(async () => (await jobRow(app)).lastRuns.some((run) => run.manual && String(run.tick) === asked.body.tick && run.outcome === 'succeeded'), 8000);
    const activity = await call<Array<{ what: string; detail: string }>>(`${app.baseUrl}/api/activity`);
    expect(activity.body).toEqual(expect.arrayContaining([expect.objectContaining({ what: 'job run', detail: 'ControlledJobs.report by ops-ben: rerun' })]));
  });

  it('answers 400 without an actor or with a reason too long, 404 for an unknown job, and changes nothing', async () => {
    const before = await db.query('SELECT id FROM locking_job_action');
    const noActor = await call<{ message: string }>(url('ControlledJobs.report', 'pause'), { reason: 'r' });
    expect(noActor).toMatchObject({ status: 400, body: { message: 'actor is required: say who acts' } });
    const noReason = await call<{ message: string }>(url('ControlledJobs.report', 'run'), { actor: 'a', reason: '  ' });
    expect(noReason).toMatchObject({ status: 400, body: { message: 'reason is required: say why' } });
    const long = await call<{ message: string }>(url('ControlledJobs.report', 'pause'), { actor: 'a', reason: 'r'.repeat(501) });
    expect(long.status).toBe(400);
    expect(long.body.message).toMatch(/^Invalid reason .*: expected a non-empty text of at most 500 characters$/);
    const unknown = await call<{ message: string }>(url('Nope.run', 'run'), { actor: 'a', reason: 'r' });
    expect(unknown).toMatchObject({ status: 404, body: { message: expect.stringContaining('No scheduled job "Nope.run" is registered') } });
    expect(await db.query('SELECT id FROM locking_job_action')).toEqual(before);
    expect((await jobRow(app)).paused).toBeNull();
  });

  it('serves the console with the controls form', async () => {
    const page = await (await fetch(`${app.baseUrl}/`)).text();
    expect(page).toContain('<form id="job-control-form" hidden>');
    expect(page).toContain('/api/jobs/');
  });
});
