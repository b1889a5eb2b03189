import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { filter, type Observable, Subject } from 'rxjs';
import { InvalidLockArgumentError, LockConfigurationError, LockShutdownError } from '../errors/index.js';
import type { LeaderOptions, LeaderTerm, LeaderWork, LeadershipChange } from '../interfaces/index.js';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import { LeaderTermStore } from '../store/leader-terms.store.js';
import { LockAcquisitions } from '../services/lock-acquisitions.service.js';
import { LockLeases } from '../services/lock-leases.service.js';
import { LockService } from '../services/lock.service.js';
import { LockedCallsTracker } from '../services/locked-calls.tracker.js';
import { LockTelemetry } from '../telemetry/lock-telemetry.service.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { bounded, NEVER } from '../utils/wait-timing.util.js';
import { LeaderCampaign } from './leader-campaign.js';
import { assertLeaderRole, resolveLeaderOptions } from './leader-role.util.js';

/** How long the shutdown waits for the candidacies to end, past `shutdownGraceMs`. */
const SHUTDOWN_SLACK_MS = 1000;

/**
 * Leader election on the lock engine: in each role, at most one replica of the fleet leads at a time, and while it
 * runs it is told (its signal fires) before any other replica can be elected; a replica paused past its lease is told
 * when it runs again (`isLeader` and `term` read the clock: false from their first call after the pause). A role is
 * the lock `leader:<role>` with one write permit: the candidates wait for it in order, woken by the database; the
 * leader holds the grant (its lease renewed) for as long as it leads. Each election records a term whose fencing token (`LeaderTerm.token`) is larger than every earlier
 * term's of the role.
 *
 * Roles come from `@Leader` methods (every replica stands when the application starts) or from `campaign()`.
 * @publicApi
 */
@Injectable()
export class LeaderService implements OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  private readonly logger = new Logger('LeaderElection');
  private readonly campaigns = new Map<string, LeaderCampaign>();
  private readonly changes$ = new Subject<LeadershipChange>();
  private started = false;
  private closing = false;

  /** @internal Nest's injector creates the service: inject `LeaderService`, never construct it. */
  constructor(
    private readonly service: LockService,
    private readonly acquisitions: LockAcquisitions,
    private readonly leases: LockLeases,
    private readonly calls: LockedCallsTracker,
    @Inject(LeaderTermStore) private readonly terms: LeaderTermStore,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    private readonly telemetry: LockTelemetry,
  ) {}

  /**
   * Stands as a candidate for `role`, with `work` as the leader's work (the programmatic form of `@Leader`): when this
   * replica is elected, `work(signal, term)` runs; `signal` fires when the leadership may be lost or is ending (stop
   * then). When `work` returns or throws, the role is handed over and the replica stands again after
   * `options.rejoinDelayMs` (longer after failures in a row, see `LeaderOptions.rejoinDelayMs`). The candidacy lasts
   * until `resign(role)` or the application's shutdown. Before the application has started (`onApplicationBootstrap`),
   * the candidacy starts with it.
   * @param role 1 to 193 bytes of UTF-8, without control characters or a trailing space
   * @throws InvalidLockArgumentError for an invalid role, work or option (nothing is started).
   * @throws LockConfigurationError when this application already stands for `role` (a `@Leader` method, or an earlier
   *   `campaign` not resigned).
   * @throws LockShutdownError once the application is closing.
   */
  campaign(role: string, work: LeaderWork, options?: LeaderOptions): void {
    this.stand(role, work, options, work.name || 'LeaderService.campaign');
  }

  /** `campaign` under a label for the logs (`@Leader`: the method's class and name). @internal */
  stand(role: string, work: LeaderWork, options: LeaderOptions | undefined, label: string): void {
    assertLeaderRole(role);
    if (typeof work !== 'function') throw new InvalidLockArgumentError('work', work, 'a function (signal, term) => unknown');
    const resolved = resolveLeaderOptions(options);
    if (this.closing) throw new LockShutdownError();
    const existing = this.campaigns.get(role);
    if (existing !== undefined) {
      throw new LockConfigurationError(
        `This application already stands for leader role ${role} (${existing.label}): one candidacy per role and application`,
      );
    }
    const campaign = new LeaderCampaign(role, work, label, resolved, {
      service: this.service,
      acquisitions: this.acquisitions,
      leases: this.leases,
      terms: this.terms,
      calls: this.calls,
      appId: this.options.appId,
      instance: this.options.instance,
      shutdownGraceMs: this.options.shutdownGraceMs,
      logger: this.logger,
      changed: (change) => {
        this.telemetry.leadershipChanged(change);
        this.changes$.next(change);
      },
    });
    this.campaigns.set(role, campaign);
    if (this.started) campaign.start();
  }

  /**
   * Whether this replica leads `role` now: it was elected, its term's signal has not fired, and its grant's lease is
   * not at risk (checked on this process's monotonic and wall clocks at the call). True at every instant, pauses
   * included: after a pause of the process past the lease it answers false from its first call, before any timer has
   * run, and that call fires the term's signal. Ask it right before an action that must not run on two replicas.
   * @throws InvalidLockArgumentError for an invalid role.
   */
  isLeader(role: string): boolean {
    return this.term(role) !== undefined;
  }

  /**
   * The term this replica leads `role` in now (its fencing token and start), or undefined when it does not lead it:
   * read as `isLeader` reads it (at the call, on this process's clocks).
   * @throws InvalidLockArgumentError for an invalid role.
   */
  term(role: string): LeaderTerm | undefined {
    assertLeaderRole(role);
    return this.campaigns.get(role)?.leading();
  }

  /**
   * This replica's changes of leadership (of `role`, or of every role): `leading: true` when it is elected (before its
   * work is called), `leading: false` at the instant its term's signal fires (before the role is handed over). Hot:
   * a subscriber sees the changes after it subscribed; read `term(role)` for the present.
   * @throws InvalidLockArgumentError for an invalid role.
   */
  changes(role?: string): Observable<LeadershipChange> {
    if (role === undefined) return this.changes$.asObservable();
    assertLeaderRole(role);
    return this.changes$.pipe(filter((change) => change.role === role));
  }

  /**
   * Gives up `role`: the term's signal fires (with a `LeadershipEndedError`) and this replica no longer leads, its work
   * is awaited for at most `shutdownGraceMs`, and the role's lock is released, which wakes the next candidate through
   * the database. A work that ignores its signal longer is not waited for: it runs on without the role, and its end is
   * logged. The candidacy ends: this replica stands again only through a new `campaign` (a `@Leader` role: after a
   * restart), which is refused until the role's lock is released. Resolves once the role is handed over (within
   * `shutdownGraceMs` and the release); at once when this replica does not stand for `role`.
   * @throws InvalidLockArgumentError for an invalid role.
   */
  async resign(role: string): Promise<void> {
    assertLeaderRole(role);
    const campaign = this.campaigns.get(role);
    if (campaign === undefined) return;
    try {
      await campaign.resign();
    } finally {
      if (this.campaigns.get(role) === campaign) this.campaigns.delete(role);
    }
  }

  /** The roles this replica stands for (for the admin views). */
  roles(): string[] {
    return [...this.campaigns.keys()];
  }

  /** Starts the candidacies declared so far. @internal */
  onApplicationBootstrap(): void {
    this.started = true;
    this.telemetry.observeLeaders(() => [...this.campaigns].map(([role, campaign]) => ({ role, term: campaign.leading() })));
    for (const campaign of this.campaigns.values()) campaign.start();
  }

  /** The application is closing: every term's signal fires and the candidacies end. @internal */
  onModuleDestroy(): void {
    this.closing = true;
    for (const campaign of this.campaigns.values()) campaign.shutdown();
  }

  /**
   * Awaits the end of the candidacies (their work within `shutdownGraceMs`, then the release of their grants) while
   * the database is open. @internal
   */
  async beforeApplicationShutdown(): Promise<void> {
    const ends = Promise.all([...this.campaigns.values()].map((campaign) => campaign.ended()));
    await bounded(ends, Date.now() + this.options.shutdownGraceMs + SHUTDOWN_SLACK_MS, NEVER);
    this.changes$.complete();
  }
}
