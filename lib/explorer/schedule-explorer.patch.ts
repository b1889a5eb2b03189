import { Logger } from '@nestjs/common';
import type { DiscoveryService } from '@nestjs/core';
import { LockConfigurationError } from '../errors/index.js';
import { runAsScheduleInvocation } from '../jobs/schedule-invocation.context.js';
import { quietShutdownRefusals } from '../jobs/shutdown-refusal.util.js';

/** The parts of `@nestjs/schedule`'s `ScheduleExplorer` (versions 6 to 12) the patch relies on. */
interface ScheduleExplorerShape {
  explore(): void;
  lookupSchedulers(instance: object, key: string): unknown;
  wrapFunctionInTryCatchBlocks(methodRef: unknown, instance: object): (...args: unknown[]) => unknown;
  schedulerOrchestrator: Record<'cronJobs' | 'intervals' | 'timeouts', Record<string, unknown>>;
}

const PATCHED = Symbol('nestjs-db-locks: ticks marked');
const RECORDS = ['cronJobs', 'intervals', 'timeouts'] as const;
/** The logger of the lines about scheduled runs (as `LockJobs`'). */
const logger = new Logger('LockJobs');

/**
 * Makes every job `@nestjs/schedule` registers run as the schedule's invocation of (instance, key) (see
 * `runAsScheduleInvocation`), and resolve quietly (one debug line) instead of rejecting when a lock it asked for was
 * refused because the application is stopping (`LockShutdownError`, see `quietShutdownRefusals`): any scheduled method,
 * with or without `@WithLocks`, that calls a locked method. The patch is set on this application's `ScheduleExplorer`
 * instance (not its prototype), before any timer is mounted (timers are mounted at bootstrap, after every
 * `onModuleInit`). When the explorer has already registered its jobs, its records are reset and it explores again with
 * the patch in place. When the schedule module is there but not in the shape this library knows (another major
 * version), throws `LockConfigurationError` if `required` (the application has `@WithLocks` jobs: a tick could not be
 * told from a direct call), else leaves it alone. Does nothing without `ScheduleModule`.
 * @internal
 */
export function markScheduleInvocations(discovery: DiscoveryService, required = true): void {
  for (const wrapper of discovery.getProviders()) {
    const explorer: unknown = wrapper.instance;
    if (typeof explorer !== 'object' || explorer === null) continue;
    const named = (explorer.constructor as { name?: unknown } | undefined)?.name === 'ScheduleExplorer';
    if (!named && !('wrapFunctionInTryCatchBlocks' in explorer && 'schedulerOrchestrator' in explorer)) continue;
    if (!isKnownShape(explorer)) {
      if (!required) continue;
      throw new LockConfigurationError(
        'The installed @nestjs/schedule is not a version nestjs-db-locks knows (^6 or ^12): its ScheduleExplorer has ' +
          'no explore / lookupSchedulers / wrapFunctionInTryCatchBlocks or its orchestrator no cronJobs / intervals / ' +
          'timeouts, so a tick of a @WithLocks job could not be told from a direct call. Install @nestjs/schedule ^6 or ^12',
      );
    }
    patch(explorer);
  }
}

function isKnownShape(explorer: object): explorer is ScheduleExplorerShape {
  const candidate = explorer as Partial<Record<keyof ScheduleExplorerShape, unknown>>;
  const orchestrator = candidate.schedulerOrchestrator as Record<string, unknown> | undefined;
  return (
    typeof candidate.explore === 'function' &&
    typeof candidate.lookupSchedulers === 'function' &&
    typeof candidate.wrapFunctionInTryCatchBlocks === 'function' &&
    typeof orchestrator === 'object' &&
    orchestrator !== null &&
    RECORDS.every((record) => typeof orchestrator[record] === 'object' && orchestrator[record] !== null)
  );
}

function patch(explorer: ScheduleExplorerShape & { [PATCHED]?: true }): void {
  if (explorer[PATCHED]) return;
  explorer[PATCHED] = true;
  const lookup = explorer.lookupSchedulers.bind(explorer);
  const wrap = explorer.wrapFunctionInTryCatchBlocks.bind(explorer);
  /** The method `lookupSchedulers` is registering, while it runs (it calls `wrapFunctionInTryCatchBlocks`). */
  let current: { instance: object; key: string } | undefined;
  explorer.lookupSchedulers = (instance, key) => {
    current = { instance, key };
    try {
      return lookup(instance, key);
    } finally {
      current = undefined;
    }
  };
  explorer.wrapFunctionInTryCatchBlocks = (methodRef, instance) => {
    const registering = current;
    if (registering === undefined || registering.instance !== instance) return wrap(methodRef, instance);
    const label = `${instance.constructor.name}.${registering.key}`;
    const target = wrap(quietShutdownRefusals(methodRef, label, logger), instance);
    return (...args: unknown[]) => runAsScheduleInvocation(registering.instance, registering.key, () => target(...args));
  };
  const orchestrator = explorer.schedulerOrchestrator;
  if (RECORDS.some((record) => Object.keys(orchestrator[record]).length > 0)) {
    // Explored already (the order of the two explorers' onModuleInit is not fixed): register again, wrapped.
    for (const record of RECORDS) orchestrator[record] = {};
    explorer.explore();
  }
}
