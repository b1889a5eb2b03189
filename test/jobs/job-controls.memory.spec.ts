import { Injectable } from '@nestjs/common';
import { Interval, ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { setTimeout as sleep } from 'node:timers/promises';
import { InMemoryLockDatabase, JobNotFoundError, LockAdminService, LockTestingModule, WithLocks } from 'nestjs-db-locks';
import { until } from '../support/until.js';

/** A job ticking every 200 ms; its runs are counted by instance. */
@Injectable()
class ControlledTick {
  static readonly runs: string[] = [];

  constructor(private readonly admin: LockAdminService) {}

  @Interval(200)
  @WithLocks('CONTROLLED_TICK_WRITE')
  async tick(): Promise<void> {
    ControlledTick.runs.push(this.admin.actor);
  }
}

/**
 * The job controls on `LockTestingModule`'s memory store, with three instances sharing one `InMemoryLockDatabase`
 * (as three replicas share a database): pause, resume and run now behave as on PostgreSQL and MySQL.
 */
describe('job controls on LockTestingModule (memory store)', () => {
  let refs: TestingModule[];
  let admin: LockAdminService;

  beforeAll(async () => {
    const database = new InMemoryLockDatabase();
    refs = await Promise.all(
      ['a', 'b', 'c'].map((appId) =>
        Test.createTestingModule({
          imports: [ScheduleModule.forRoot(), LockTestingModule.forRoot({ appId, instance: appId, database })],
          providers: [ControlledTick],
        }).compile(),
      ),
    );
    for (const ref of refs) ref.useLogger(false);
    await Promise.all(refs.map((ref) => ref.init()));
    admin = refs[0]!.get(LockAdminService);
    await until(() => ControlledTick.runs.length >= 2, 5000);
  });
  afterAll(async () => {
    await Promise.all(refs.map((ref) => ref.close()));
  });

  it('records the ticks of a paused job paused, runs it nowhere, and runs the next tick after resume', async () => {
    const paused = await admin.pauseJob('ControlledTick.tick', { actor: 'alice', reason: 'pause' });
    expect(paused).toMatchObject({ changed: true });
    await sleep(100); // a tick claimed before the pause ends
    const before = ControlledTick.runs.length;
    await sleep(1000);
    expect(ControlledTick.runs.length).toBe(before);
    const runs = await admin.getJobRuns({ job: 'ControlledTick.tick', since: new Date(paused.at.getTime() + 250) });
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.every((run) => run.outcome === 'paused' && run.actor === 'alice' && run.reason === 'pause')).toBe(true);
    expect((await admin.getJobs())[0]!.paused).toMatchObject({ actor: 'alice', reason: 'pause' });
    await admin.resumeJob('ControlledTick.tick', { actor: 'bob', reason: 'resume' });
    await until(() => ControlledTick.runs.length > before, 2000);
    expect((await admin.getJobActions()).map((action) => action.action)).toEqual(['resume', 'pause']);
  });

  it('runs a paused job once on "run now", on one instance, recorded as manual', async () => {
    await admin.pauseJob('ControlledTick.tick', { actor: 'alice', reason: 'quiet' });
    await sleep(300);
    const before = ControlledTick.runs.length;
    const asked = await admin.runJobNow('ControlledTick.tick', { actor: 'carol', reason: 'once' });
    await until(async () => (await admin.getJobRuns({ since: asked.tick! })).some((run) => run.manual && run.outcome === 'succeeded'), 3000);
    await sleep(1500); // the three instances looked for the request again: it ran once
    expect(ControlledTick.runs.length - before).toBe(1);
    const [run] = (await admin.getJobRuns({ job: 'ControlledTick.tick' })).filter((r) => r.manual);
    expect(run).toMatchObject({ actor: 'carol', reason: 'once', tick: asked.tick });
    expect(['a', 'b', 'c']).toContain(run!.appId);
    await admin.resumeJob('ControlledTick.tick', { actor: 'alice', reason: 'done' });
  });

  it('refuses an unknown job, an empty actor and a reason too long before touching the store', async () => {
    await expect(admin.runJobNow('Nope.run', { actor: 'a', reason: 'r' })).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(admin.pauseJob('ControlledTick.tick', { actor: '', reason: 'r' })).rejects.toMatchObject({ argument: 'actor' });
    await expect(admin.pauseJob('ControlledTick.tick', { actor: 'a', reason: 'x'.repeat(501) })).rejects.toMatchObject({ argument: 'reason' });
    expect((await admin.getJobs())[0]!.paused).toBeNull();
  });
});
