import { MetadataScanner } from '@nestjs/core';
import type { DiscoveryService } from '@nestjs/core';
import { Cron, ScheduleExplorer } from '@nestjs/schedule';
import { LockConfigurationError } from '../../lib/errors/index.js';
import { markScheduleInvocations } from '../../lib/explorer/schedule-explorer.patch.js';
import { type ScheduleInvocation, takeScheduleInvocation } from '../../lib/jobs/schedule-invocation.context.js';

/** A job whose method records the schedule invocation it is the tick of (undefined: no tick). */
class Reports {
  readonly seen: Array<ScheduleInvocation | undefined> = [];

  @Cron('0 0 0 1 1 *', { name: 'reports' })
  run(): void {
    this.seen.push(takeScheduleInvocation(this, 'run'));
    // A second call within the same invocation (a retry, a recursion) is no tick.
    this.seen.push(takeScheduleInvocation(this, 'run'));
  }
}

type Records = Record<'cronJobs' | 'intervals' | 'timeouts', Record<string, { target: () => Promise<void> }>>;

/** A real ScheduleExplorer of this @nestjs/schedule, over a recording orchestrator, that discovers `jobs`. */
function scheduleOf(jobs: Reports) {
  const orchestrator: Records & { addCron(fn: () => Promise<void>, options: { name: string }): void } = {
    cronJobs: {},
    intervals: {},
    timeouts: {},
    addCron(target, options) {
      if (this.cronJobs[options.name]) throw new Error(`duplicate ${options.name}`);
      this.cronJobs[options.name] = { target };
    },
  };
  const wrapper = (instance: object) => ({ instance, isDependencyTreeStatic: () => true });
  const accessor = {
    getSchedulerType: (ref: object) => Reflect.getMetadata('SCHEDULER_TYPE', ref) as unknown,
    getCronMetadata: (ref: object) => Reflect.getMetadata('SCHEDULE_CRON_OPTIONS', ref) as unknown,
  };
  const providers: Array<{ instance: object; isDependencyTreeStatic(): boolean }> = [wrapper(jobs)];
  const discovery = { getControllers: () => [], getProviders: () => providers } as unknown as DiscoveryService;
  const explorer = new ScheduleExplorer({ cronJobs: true, intervals: true, timeouts: true }, orchestrator as never, discovery, accessor as never, new MetadataScanner());
  providers.push(wrapper(explorer));
  return { explorer, orchestrator, discovery };
}

describe('markScheduleInvocations: a tick is what the schedule registered, called by its timer', () => {
  it.each([
    ['before the schedule module explores', false],
    ['after it explored (its records are registered again, wrapped)', true],
  ])('marks each call of the registered job as its tick, patched %s', async (_case, exploredFirst) => {
    const jobs = new Reports();
    const { explorer, orchestrator, discovery } = scheduleOf(jobs);
    if (exploredFirst) explorer.explore();
    markScheduleInvocations(discovery);
    if (!exploredFirst) explorer.explore();
    expect(Object.keys(orchestrator.cronJobs)).toEqual(['reports']);
    const before = Date.now();
    await orchestrator.cronJobs.reports!.target();
    // A direct call is no tick.
    jobs.run();
    expect(jobs.seen).toEqual([{ instance: jobs, key: 'run', firedAt: expect.any(Number), taken: true }, undefined, undefined, undefined]);
    expect(jobs.seen[0]!.firedAt).toBeGreaterThanOrEqual(before);
  });

  it('refuses a ScheduleExplorer of a shape it does not know, naming the version problem', () => {
    class ScheduleExplorer {
      wrapFunctionInTryCatchBlocks(): void {}
    }
    const discovery = { getProviders: () => [{ instance: new ScheduleExplorer() }] } as unknown as DiscoveryService;
    expect(() => markScheduleInvocations(discovery)).toThrow(LockConfigurationError);
    expect(() => markScheduleInvocations(discovery)).toThrow(/@nestjs\/schedule is not a version nestjs-db-locks knows/);
    // Without @WithLocks jobs (only the quieting of shutdown refusals is at stake), an unknown shape is left alone.
    expect(() => markScheduleInvocations(discovery, false)).not.toThrow();
  });
});
