import type { Attributes, Counter, Meter, ObservableGauge, ObservableResult } from '@opentelemetry/api';
import type { LeaderTerm, LeadershipChange } from '../interfaces/index.js';
import { METRIC_PREFIX } from './lock-metrics.service.js';

/** The roles this replica stands for, each with the term it leads in now (undefined: it does not lead). @internal */
export type LeaderStates = () => Iterable<{ readonly role: string; readonly term: LeaderTerm | undefined }>;

/**
 * The instruments of leader election, recorded by each replica for itself: `nestjs_db_locks.leader.is_leader` (1 while
 * it leads the role, 0 while it stands as a candidate), `nestjs_db_locks.leader.term` (the fencing token of the term it
 * leads in, 0 when it does not lead: the fleet's maximum is the role's current term), `nestjs_db_locks.leader.elections`
 * (terms it won) and `nestjs_db_locks.leader.terms_ended` (its terms that ended, by reason: the hand-overs).
 * @internal
 */
export class LockLeaderMetrics {
  private readonly elections: Counter;
  private readonly ended: Counter;
  private readonly isLeader: ObservableGauge;
  private readonly term: ObservableGauge;
  private readonly attributes = new Map<string, Attributes>();
  /** Every role reported so far: one no longer stood for (resigned) reports 0, not its last value. */
  private readonly reported = new Set<string>();
  private stop?: () => void;

  constructor(
    meter: Meter,
    private readonly appId: string,
  ) {
    this.elections = meter.createCounter(`${METRIC_PREFIX}.leader.elections`, {
      unit: '{term}',
      description: 'Terms of leadership this replica won, by role',
    });
    this.ended = meter.createCounter(`${METRIC_PREFIX}.leader.terms_ended`, {
      unit: '{term}',
      description: 'Terms of leadership of this replica that ended, by role and reason',
    });
    this.isLeader = meter.createObservableGauge(`${METRIC_PREFIX}.leader.is_leader`, {
      unit: '1',
      description: 'Whether this replica leads the role now (1) or stands as a candidate (0)',
    });
    this.term = meter.createObservableGauge(`${METRIC_PREFIX}.leader.term`, {
      unit: '{term}',
      description: "The fencing token of the role's term this replica leads in (0 when it does not lead)",
    });
  }

  /** Counts an election (`leading`) or the end of a term (by its reason). */
  changed(change: LeadershipChange): void {
    if (change.leading) this.elections.add(1, this.of(change.role));
    else this.ended.add(1, this.of(change.role, change.reason));
  }

  /** Reports the gauges from `states` at every collection. */
  observe(states: LeaderStates): void {
    this.stop?.();
    const leading = (result: ObservableResult): void => {
      for (const [role, term] of this.read(states)) result.observe(term === undefined ? 0 : 1, this.of(role));
    };
    const token = (result: ObservableResult): void => {
      for (const [role, term] of this.read(states)) result.observe(term?.token ?? 0, this.of(role));
    };
    this.isLeader.addCallback(leading);
    this.term.addCallback(token);
    this.stop = () => {
      this.isLeader.removeCallback(leading);
      this.term.removeCallback(token);
    };
  }

  /** Stops the gauges' callbacks. */
  close(): void {
    this.stop?.();
    this.stop = undefined;
  }

  /** The roles of `states` now, and those reported before that it no longer has (not leading). */
  private read(states: LeaderStates): Map<string, LeaderTerm | undefined> {
    const now = new Map<string, LeaderTerm | undefined>();
    for (const { role, term } of states()) now.set(role, term);
    for (const role of this.reported) if (!now.has(role)) now.set(role, undefined);
    for (const role of now.keys()) this.reported.add(role);
    return now;
  }

  /** The attributes of `role` (and `reason`), made once. */
  private of(role: string, reason?: string): Attributes {
    const key = `${role}\u0000${reason ?? ''}`;
    let attributes = this.attributes.get(key);
    if (!attributes) {
      attributes = reason === undefined ? { role, 'app.id': this.appId } : { role, reason, 'app.id': this.appId };
      this.attributes.set(key, attributes);
    }
    return attributes;
  }
}
