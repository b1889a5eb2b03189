import type { Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { LeadershipEndedError, LockLostError, LockShutdownError } from '../errors/index.js';
import type { LeaderTerm, LeaderWork, LeadershipChange, LeadershipChangeReason } from '../interfaces/index.js';
import type { LeaderTermStore } from '../store/leader-terms.store.js';
import type { LockAcquisitions } from '../services/lock-acquisitions.service.js';
import type { LockLeases } from '../services/lock-leases.service.js';
import type { LockService } from '../services/lock.service.js';
import type { LockedCallsTracker, ShutdownHolder } from '../services/locked-calls.tracker.js';
import { parseLockGroup } from '../utils/parse-lock-spec.util.js';
import { bounded, jittered, NEVER, sleep } from '../utils/wait-timing.util.js';
import { errorMessage, LeaderFailures, type WorkEnd } from './leader-failures.tracker.js';
import { leaderLockName, type ResolvedLeaderOptions } from './leader-role.util.js';

/** The longest wait of one `tryLocks` (then the candidate waits again). */
const MAX_WAIT_MS = 2_147_483_647;

/**
 * How long a candidate pauses after a failure (the database away, an election refused) before it stands again (half
 * to all of it, at random: two candidates refused together do not retry together).
 */
const RETRY_MS = 1000;

/** What a campaign needs from its application. @internal */
export interface CampaignContext {
  readonly service: LockService;
  /** Takes the role's lock: as a grant that `maxHoldMs` does not bound (a term lasts while its lease is renewed). */
  readonly acquisitions: LockAcquisitions;
  readonly leases: LockLeases;
  readonly terms: LeaderTermStore;
  readonly calls: LockedCallsTracker;
  readonly appId: string;
  readonly instance: string;
  readonly shutdownGraceMs: number;
  readonly logger: Logger;
  readonly changed: (change: LeadershipChange) => void;
}

/** A term this replica serves: its grant, its signal, and what ends it. */
interface ServedTerm extends ShutdownHolder {
  readonly term: LeaderTerm;
  readonly stamp: number;
  /** Fires when the leadership may be lost or is ending: the grant's signal, or `controller`'s. */
  readonly signal: AbortSignal;
  readonly controller: AbortController;
  /** Releases the role's grant (once). */
  readonly release: () => Promise<void>;
  /** Tells the shutdown the term has ended (its grant released). */
  readonly ended: () => void;
}

/** Why a term's signal fired, as a `LeadershipChange` says it. */
function reasonOf(signal: AbortSignal): LeadershipChangeReason {
  const reason: unknown = signal.reason;
  if (reason instanceof LockShutdownError) return 'shutdown';
  if (reason instanceof LeadershipEndedError) return reason.why;
  return 'lost';
}

/** A Promise that resolves when `signal` fires. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/**
 * One role's candidacy in this application, on the lock engine: the candidate waits for the role's lock
 * (`leader:<role>`, one writer) in the order of the waiters, woken by the database; the grant that wins it records a
 * new term (`LeaderTermStore.elect`: the fencing token), and the work runs while the grant is held. The term's signal
 * fires before the grant can end (the grant's own signal: its lease expiry is watched on this process's clock, with
 * the engine's margin), or before this replica releases it (the work ended, `resign`, shutdown): while this process
 * runs, no other replica can be elected before this one was told. (A process paused past its lease is told when it
 * runs again: `leading()` reads the clocks, and its first call fires the signal.) Then the work is awaited (within
 * `shutdownGraceMs`), the grant released, and the replica stands again (after `rejoinDelayMs`, longer after repeated
 * failures: `LeaderFailures`), unless it resigned or the application is closing. The role's grant is not bounded by
 * `maxHoldMs`: it starts with a lease of `leaseMs`, and a term lasts for as long as its lease is renewed.
 * @internal
 */
export class LeaderCampaign {
  /** Ends the candidacy (resign, shutdown): its reason is the reason given to the term being served. */
  private readonly stop = new AbortController();
  private served?: ServedTerm;
  private loop?: Promise<void>;
  /** The work's failures in a row: the pause before standing again. */
  private readonly failures: LeaderFailures;

  constructor(
    readonly role: string,
    /** What the replica runs while it leads, and how the logs name it. */
    private readonly work: LeaderWork,
    readonly label: string,
    options: ResolvedLeaderOptions,
    private readonly context: CampaignContext,
  ) {
    this.failures = new LeaderFailures(role, label, options.rejoinDelayMs, context.logger);
  }

  /** Stands as a candidate (once). */
  start(): void {
    this.loop ??= this.run();
  }

  /**
   * The term this replica leads now, if it does: its signal has not fired and its grant's lease is not at risk, read on
   * this process's monotonic and wall clocks at each call. After a pause past the lease, the first call answers
   * undefined, and fires the term's signal (lost) if no timer has yet.
   */
  leading(): LeaderTerm | undefined {
    const served = this.served;
    if (served === undefined || served.signal.aborted) return undefined;
    // A lease past its deadline is lost here and now (the signal fires) whatever the watchdog's timer does; a grant no
    // longer held for any other reason fires it too: never "not leading" with the signal quiet.
    if (!this.context.leases.isHeld(served.stamp)) {
      const reason = this.context.leases.lossReason(served.stamp) ?? 'its grant is no longer held';
      served.controller.abort(new LockLostError(served.stamp, reason));
      return undefined;
    }
    return served.signal.aborted ? undefined : served.term;
  }

  /**
   * Ends the term being served (if any) and the candidacy; resolves once the role's grant is given up: when the work
   * has ended, or `shutdownGraceMs` after the signal while it has not (it no longer leads; its end is logged).
   */
  async resign(): Promise<void> {
    this.end(new LeadershipEndedError(this.role, 'resigned'));
    await this.loop;
  }

  /** The application is closing: the term's signal fires, and the candidacy ends. */
  shutdown(): void {
    this.end(new LockShutdownError());
  }

  /** Resolves when the candidacy has ended (after `resign` or `shutdown`). */
  ended(): Promise<void> {
    return this.loop ?? Promise.resolve();
  }

  private end(reason: Error): void {
    if (!this.stop.signal.aborted) this.stop.abort(reason);
    this.served?.controller.abort(reason);
  }

  private async run(): Promise<void> {
    while (!this.stop.signal.aborted) {
      let pause = 0;
      try {
        const served = await this.context.calls.starts(this.stand());
        pause = served === undefined ? jittered(RETRY_MS) : await this.serve(served);
      } catch (error) {
        // The application is closing (its waits end before this service hears of it): the candidacy ends quietly.
        if (error instanceof LockShutdownError) this.shutdown();
        if (this.stop.signal.aborted) break;
        pause = jittered(RETRY_MS);
        this.context.logger.warn(`Role ${this.role}: could not stand as a candidate (again in ${Math.round(pause)} ms): ${(error as Error).message}`);
      }
      if (pause > 0) await sleep(pause, this.stop.signal);
    }
  }

  /**
   * Waits for the role's lock, then records the term. Undefined when the election was refused (the grant ended
   * meanwhile, or another grant holds the role's lock); rejects when the wait ends without a grant.
   */
  private async stand(): Promise<ServedTerm | undefined> {
    const { service, acquisitions, terms, leases } = this.context;
    const group = parseLockGroup([{ name: leaderLockName(this.role), mode: 'write' }]);
    let stamp = 0;
    while (stamp === 0) {
      // Unbounded: the term lasts while the replica lives and renews the lease, whatever the instance's maxHoldMs.
      stamp = await acquisitions.acquire(group, MAX_WAIT_MS, this.stop.signal, true);
    }
    const release = () => service.releaseLocks(stamp);
    let election;
    try {
      election = await terms.elect(this.role, stamp, this.context.appId, this.context.instance);
    } catch (error) {
      await release().catch(() => undefined);
      throw error;
    }
    if (election === undefined || !leases.isHeld(stamp) || this.stop.signal.aborted) {
      if (election === undefined) {
        this.context.logger.warn(
          `Role ${this.role}: the election of grant ${stamp} was refused (its lease ended, or another grant holds the ` +
            `role's lock: do not give ${leaderLockName(this.role)} more than one write permit)`,
        );
      }
      await release().catch(() => undefined);
      return undefined;
    }
    return this.termOf(stamp, { role: this.role, token: election.term, since: new Date(election.electedAt) }, release);
  }

  /** The served term of grant `stamp`, registered with the shutdown (told at once when it has begun). */
  private termOf(stamp: number, term: LeaderTerm, releaseLocks: () => Promise<void>): ServedTerm {
    const controller = new AbortController();
    let released: Promise<void> | undefined;
    let ended!: () => void;
    const served: ServedTerm = {
      term,
      stamp,
      controller,
      signal: AbortSignal.any([this.context.leases.signal(stamp), controller.signal]),
      description: `The leader of role ${this.role} (${this.label})`,
      release: () =>
        (released ??= releaseLocks().catch((error: unknown) =>
          this.context.logger.debug(`Role ${this.role}: the release of term ${term.token} failed: ${(error as Error).message}`),
        )),
      ended: () => ended(),
      stopping: () => this.shutdown(),
      end: () => served.release(),
    };
    this.served = served;
    this.context.calls.hold(served, new Promise<void>((resolve) => (ended = resolve)));
    return served;
  }

  /**
   * Runs the work for the term, until it ends or the term's signal fires; then the work is awaited within
   * `shutdownGraceMs`, and the grant released (the next candidate is elected). Resolves with the pause before this
   * replica stands again, once the grant is given up; after a work that outlived its grace, once that work has ended
   * too (never two runs of the work in one candidacy), or at once when the candidacy ends.
   */
  private async serve(served: ServedTerm): Promise<number> {
    const { term, signal } = served;
    const { logger } = this.context;
    if (signal.aborted) {
      await served.release();
      served.ended();
      this.served = undefined;
      return 0;
    }
    signal.addEventListener('abort', () => this.stopped(served), { once: true });
    logger.log(`Leading role ${this.role} (term ${term.token}): ${this.label} starts`);
    this.context.changed({ role: this.role, leading: true, term, reason: 'elected' });
    const startedAt = performance.now();
    const done = (async (): Promise<WorkEnd> => {
      try {
        await this.work(signal, term);
        return { threw: false };
      } catch (error) {
        return { threw: true, error };
      }
    })();
    await Promise.race([done, aborted(signal)]);
    let pause = 0;
    let late = false;
    if (!signal.aborted) {
      pause = this.failures.workEnded(term, await done, performance.now() - startedAt);
      served.controller.abort(new LeadershipEndedError(this.role, 'work-ended'));
    } else {
      const toldAt = performance.now();
      this.failures.told(toldAt - startedAt);
      late = (await bounded(done, Date.now() + this.context.shutdownGraceMs, NEVER)) === undefined;
      if (late) this.outlived(term, done, toldAt);
    }
    // Its signal has fired (it no longer leads): the grant is given up, which wakes the next candidate.
    await served.release();
    served.ended();
    if (this.served === served) this.served = undefined;
    if (late) await Promise.race([done, aborted(this.stop.signal)]);
    return pause;
  }

  /**
   * The work of `term` still runs `shutdownGraceMs` after its signal fired (at `toldAt`): the role is handed over all
   * the same (this replica no longer leads), and the work's end, whenever it comes, is logged once.
   */
  private outlived(term: LeaderTerm, done: Promise<WorkEnd>, toldAt: number): void {
    const { logger, shutdownGraceMs } = this.context;
    const of = `${this.label}, leader of role ${this.role} (term ${term.token})`;
    const then = this.stop.signal.aborted ? '' : '; this replica stands again once it has ended';
    logger.warn(
      `${of}, still runs ${shutdownGraceMs} ms after its signal fired: it no longer leads, and the role is handed over ` +
        `all the same${then}`,
    );
    void done.then((end) => {
      const how = end.threw ? `threw: ${errorMessage(end.error)}` : 'returned';
      const after = Math.round(performance.now() - toldAt);
      logger.warn(`${of}, ended ${after} ms after its signal fired, after its term (it ${how})`);
    });
  }

  /** The term's signal fired: this replica no longer leads (told before the grant can go to anybody else). */
  private stopped(served: ServedTerm): void {
    const reason = reasonOf(served.signal);
    const why = served.signal.reason instanceof LockLostError ? `: ${(served.signal.reason as Error).message}` : '';
    this.context.logger.log(`Stopped leading role ${this.role} (term ${served.term.token}, ${reason})${why}`);
    this.context.changed({ role: this.role, leading: false, term: served.term, reason });
  }
}
