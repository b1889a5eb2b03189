import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockJobs, type ScheduledJob } from '../jobs/lock-jobs.service.js';
import { scheduleOf } from '../jobs/job-schedule.util.js';
import { LockConfigurationError } from '../errors/index.js';
import { withLocksOf } from '../decorators/with-locks.registry.js';
import { jobIdentityOf } from '../jobs/job-catalog.js';
import { LockDataSources } from '../services/lock-data-sources.service.js';
import { LockTransactionRunners } from '../services/lock-transaction-runners.service.js';
import { LockPermitsCache } from '../services/lock-permits-cache.service.js';
import { LockServiceHost } from '../services/lock-service.host.js';
import { LockService } from '../services/lock.service.js';
import { returnTypeProblem } from '../utils/method-return.util.js';
import { markScheduleInvocations } from './schedule-explorer.patch.js';
import type { RunRequested } from '../jobs/job-requests.poller.js';
import { runAsScheduleInvocation } from '../jobs/schedule-invocation.context.js';
import type { RunRequest } from '../store/job-runs.store.js';
import type { WithLocksDeclaration } from '../utils/resolve-with-locks-options.util.js';

interface DecoratedMethod {
  readonly label: string;
  readonly lock: WithLocksDeclaration;
}

/**
 * Finds every `@WithLocks` method of the application at start-up. Read-only: it binds each instance to this
 * application's `LockService` (so that several applications in one process stay apart), logs one line per method,
 * warns when a permits row makes a decorated lock impossible to take, and fails the start-up when a fenced
 * transaction names a DataSource the application does not register (or a runner it does not provide) or when a
 * method cannot return a Promise or an
 * Observable (`returnTypeProblem`); declares each scheduled job under its identity (refusing a duplicate or a name
 * the history cannot hold) and registers its schedule in the run history. It never replaces a method; it patches this
 * application's `ScheduleExplorer` so that a tick is known as the schedule's own invocation and a scheduled method
 * refused a lock because the application stops ends with one debug line, not an error (see `markScheduleInvocations`).
 * @internal
 */
@Injectable()
export class LockExplorer implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('LockModule');
  private readonly methods: DecoratedMethod[] = [];
  private readonly jobs: Array<{ readonly job: ScheduledJob; readonly runNow: RunRequested }> = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly service: LockService,
    private readonly permits: LockPermitsCache,
    private readonly dataSources: LockDataSources,
    private readonly runners: LockTransactionRunners,
    private readonly lockJobs: LockJobs,
  ) {}

  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      const instance: unknown = wrapper.instance;
      // Request-scoped instances do not exist yet; their calls use the last initialised LockService.
      if (!wrapper.isDependencyTreeStatic() || typeof instance !== 'object' || instance === null) continue;
      const prototype = Object.getPrototypeOf(instance) as object | null;
      if (!prototype) continue;
      let decorated = false;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        // Recorded by `@WithLocks` itself, so found whatever decorator wraps the method above it.
        const lock = withLocksOf(prototype, name);
        if (!lock) continue;
        decorated = true;
        const method = (instance as Record<string, unknown>)[name] as object;
        const label = `${instance.constructor.name}.${name}`;
        const problem = returnTypeProblem(prototype, name, method);
        if (problem !== undefined) throw new LockConfigurationError(`@WithLocks ${label} is refused: ${problem}`);
        this.methods.push({ label, lock });
        // The schedule is where `@nestjs/schedule` reads it: on the method the instance exposes.
        const schedule = scheduleOf(method);
        if (!schedule) continue;
        const job: ScheduledJob = { label: jobIdentityOf(instance, name, method), schedule, runs: lock.scheduledRuns ?? 'once-per-tick' };
        this.lockJobs.catalog.declare(job, `${label} in ${wrapper.host?.name ?? 'an unknown module'}`, { instance, key: name });
        // A "run now" of the job: the method called as its schedule calls it (whatever decorators sit between).
        const runNow = (request: RunRequest) =>
          runAsScheduleInvocation(instance, name, () => Promise.resolve(Reflect.apply(method as () => unknown, instance, [])), request);
        this.jobs.push({ job, runNow });
      }
      if (decorated) LockServiceHost.bind(instance, this.service);
    }
    // Before the timers are mounted (at bootstrap): every job the schedule registers runs as its own invocation, and
    // any scheduled method refused a lock at shutdown ends quietly (required only when there are @WithLocks jobs).
    markScheduleInvocations(this.discovery, this.jobs.length > 0);
  }

  /** Logs the decorated methods, checks their permits and DataSources, and registers the scheduled jobs' schedules. */
  async onApplicationBootstrap(): Promise<void> {
    for (const { label, lock } of this.methods) {
      if (lock.transaction?.runner !== undefined) this.runners.verify(label, lock.transaction);
      else if (lock.transaction) this.dataSources.verify(lock.transaction.dataSource);
      const specs = lock.requests?.map((r) => `${r.name}_${r.mode.toUpperCase()}`).join(', ') ?? 'locks from its arguments';
      this.logger.log(`@WithLocks ${label} → ${specs}${lock.transaction ? ', in a fenced transaction' : ''}`);
      for (const request of lock.requests ?? []) {
        const permits = this.permits.get(request.name)[request.mode];
        if (permits < 1) {
          this.logger.warn(`${label} can never take ${request.name} (${request.mode}): its permits row says ${permits}`);
        }
      }
    }
    await Promise.all(this.jobs.map(({ job, runNow }) => this.lockJobs.register(job, runNow)));
  }
}
