import { LockError, LockStoreError, type LockPermits, type LockRequest, type LockService } from 'nestjs-db-locks';
import { setTimeout as sleep } from 'node:timers/promises';
import { GrantChecker } from './grant-checker.js';
import { stoppedAfterEach } from './leftovers.js';

/** What a load run saw. */
export interface LoadReport {
  /** Breaches of the permits seen by the holders (see `GrantChecker`). */
  readonly violations: readonly string[];
  /** Errors that were not a typed `LockError` (a raw driver error reached a caller). */
  readonly untyped: unknown[];
  granted: number;
  /** Grants whose signal fired while their holder held them. */
  lost: number;
  /** `tryLocks` or `releaseLocks` calls that failed with a typed error. */
  failed: number;
  /** With `waitMs`: waits that ended with a `LockStoreError` before their deadline (a wait ends by grant, timeout, abort or shutdown). */
  readonly waitStoreErrors: string[];
  /** Write grants whose stamp was not larger than every stamp granted on their names before (fencing tokens). */
  readonly tokenViolations: string[];
  /** The stamps of acknowledged grants, and of acknowledged releases. */
  readonly grantedStamps: number[];
  readonly releasedStamps: number[];
}

/** Groups the workers take: one or two names of a few, read or write. */
function randomGroup(names: readonly string[]): LockRequest[] {
  const first = names[Math.floor(Math.random() * names.length)]!;
  const second = names[Math.floor(Math.random() * names.length)]!;
  const mode = (): 'read' | 'write' => (Math.random() < 0.5 ? 'read' : 'write');
  return first === second ? [{ name: first, mode: mode() }] : [{ name: first, mode: mode() }, { name: second, mode: mode() }];
}

/**
 * Real concurrent load for the fault tests: `workers` loops per instance take random groups of `names`, hold them a
 * few milliseconds and release them, while faults happen. With `longHoldMs`, one more loop, on the first instance,
 * takes one name at a time and holds it that long (several leases: through renewals, faults and reapers) while the
 * others keep asking for it. Every holder obeys
 * its grant's signal: it stops holding the moment the signal fires. The checker sees each holding window from the
 * holder's side (from `tryLocks` returning to its release or its signal), so any overlap beyond the permits is a
 * holder that was not told before another was granted. `stop()` ends the loops and resolves with what they saw.
 */
export function startLoad(
  instances: readonly LockService[],
  options: {
    names: readonly string[];
    workers: number;
    permits: (name: string) => LockPermits;
    longHoldMs?: number;
    /** Each acquisition waits this long (`tryLocks(group, { waitMs })`); without it, it does not wait. */
    waitMs?: number;
  },
): { readonly report: LoadReport; stop(): Promise<LoadReport> } {
  const checker = new GrantChecker(options.permits);
  const report: LoadReport = {
    violations: checker.violations,
    untyped: [],
    granted: 0,
    lost: 0,
    failed: 0,
    waitStoreErrors: [],
    tokenViolations: [],
    grantedStamps: [],
    releasedStamps: [],
  };
  const newest = new Map<string, number>();
  let running = true;
  let stopped!: () => void;
  const stopping = new Promise<void>((resolve) => (stopped = resolve));
  const noteError = (error: unknown) => {
    if (error instanceof LockError) report.failed++;
    else report.untyped.push(error);
  };
  const worker = async (locks: LockService, holdMs?: number) => {
    while (running) {
      const group = holdMs ? randomGroup(options.names).slice(0, 1) : randomGroup(options.names);
      let stamp = 0;
      const asked = Date.now();
      try {
        stamp = await locks.tryLocks(group, options.waitMs ? { waitMs: options.waitMs } : undefined);
      } catch (error) {
        noteError(error);
        const waited = Date.now() - asked;
        if (options.waitMs && error instanceof LockStoreError && waited < options.waitMs) {
          report.waitStoreErrors.push(`${error.message} (after ${waited} ms of ${options.waitMs})`);
        }
        await sleep(20);
        continue;
      }
      if (stamp === 0) {
        await sleep(2);
        continue;
      }
      report.granted++;
      report.grantedStamps.push(stamp);
      for (const { name, mode } of group) {
        if (mode === 'write' && stamp <= (newest.get(name) ?? 0)) report.tokenViolations.push(`${name}: write stamp ${stamp} after ${newest.get(name)}`);
        newest.set(name, Math.max(stamp, newest.get(name) ?? 0));
      }
      let holding = true;
      checker.enter(group, stamp);
      const signal = locks.getSignal(stamp);
      const leave = () => {
        if (!holding) return;
        holding = false;
        checker.leave(group);
      };
      signal.addEventListener('abort', () => {
        report.lost++;
        leave();
      });
      if (signal.aborted) {
        report.lost++;
        leave();
      }
      if (holdMs) {
        const told = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        await Promise.race([sleep(holdMs), told, stopping]);
      } else {
        await sleep(Math.random() * 10);
      }
      leave();
      try {
        await locks.releaseLocks(stamp);
        report.releasedStamps.push(stamp);
      } catch (error) {
        noteError(error);
      }
    }
  };
  const loops = instances.flatMap((locks) => Array.from({ length: options.workers }, () => worker(locks)));
  if (options.longHoldMs && instances[0]) loops.push(worker(instances[0], options.longHoldMs));
  return stoppedAfterEach({
    report,
    async stop() {
      running = false;
      stopped();
      await Promise.all(loops);
      return report;
    },
  });
}

/** Records unhandled rejections and uncaught exceptions while a fault test runs. */
export function watchProcess(): { readonly problems: unknown[]; stop(): void } {
  const problems: unknown[] = [];
  const record = (problem: unknown) => void problems.push(problem);
  process.on('unhandledRejection', record);
  process.on('uncaughtException', record);
  return {
    problems,
    stop: () => {
      process.off('unhandledRejection', record);
      process.off('uncaughtException', record);
    },
  };
}
