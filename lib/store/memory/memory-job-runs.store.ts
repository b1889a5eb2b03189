import type { LockJobAction, LockJobActionKind, LockJobInfo, LockJobRun, LockJobRunQuery } from '../../interfaces/index.js';
import type { InMemoryLockDatabase, MemoryJobRunRow } from './memory-lock.database.js';
import {
  type ControlResult,
  type JobActionQuery,
  type JobRegistration,
  JobRunStore,
  type RunEnd,
  type RunRequest,
  type TickCheck,
  type TickClaim,
  type TickSource,
  requestAtFreeTick,
} from '../job-runs.store.js';

const runKey = (job: string, tick: number) => `${tick}\u0000${job}`;

/**
 * `JobRunStore` over an `InMemoryLockDatabase`: the decisions of `locking_claim_job_tick` and its siblings (each
 * operation runs whole, so the claims of one job are serialised as the database serialises them). @internal
 */
export class MemoryJobRunStore extends JobRunStore {
  constructor(private readonly db: InMemoryLockDatabase) {
    super();
  }

  /** A run whose grant is gone without an end recorded. */
  private abandoned(row: MemoryJobRunRow): boolean {
    return row.outcome === 'running' && !this.db.locks.some((lock) => lock.stamp === row.stamp);
  }

  async claim(job: string, source: TickSource, appId: string, stamp: number | null): Promise<TickClaim> {
    const now = this.db.now();
    if (stamp !== null) {
      const own = [...this.db.jobRuns.values()].find((row) => row.job === job && row.outcome === 'running' && row.stamp === stamp);
      if (own) return { tick: own.tick, result: 'claimed', dbNow: now };
    }
    const tick = 'at' in source ? source.at : Math.floor(now / source.periodMs) * source.periodMs;
    const claimableUntil = 'at' in source ? Math.max(tick, source.until ?? tick) : tick + source.periodMs;
    const pause = stamp === null ? undefined : this.db.jobPauses.get(job);
    if (pause !== undefined) {
      const key = runKey(job, tick);
      const row = this.db.jobRuns.get(key);
      if (!row) {
        this.db.jobRuns.set(key, {
          ...{ job, tick, appId: null, stamp: null, started: null, durationMs: null, error: null },
          ...{ outcome: 'paused', skippedBusy: 0, skippedElsewhere: 0, claimableUntil, actor: pause.actor, reason: pause.reason },
        });
      } else {
        row.claimableUntil = Math.max(row.claimableUntil, claimableUntil);
        if (row.outcome === 'skipped') Object.assign(row, { outcome: 'paused', actor: pause.actor, reason: pause.reason });
      }
      return { tick, result: 'paused', dbNow: now };
    }
    const busy =
      stamp === null ||
      [...this.db.jobRuns.values()].some(
        (row) => row.job === job && row.outcome === 'running' && row.tick !== tick && !this.abandoned(row),
      );
    const key = runKey(job, tick);
    const row = this.db.jobRuns.get(key);
    const mine = { appId, stamp, started: now, outcome: 'running' as const };
    if (!row) {
      this.db.jobRuns.set(key, {
        job,
        tick,
        ...(busy ? { appId: null, stamp: null, started: null, outcome: 'skipped' } : mine),
        durationMs: null,
        error: null,
        skippedBusy: busy ? 1 : 0,
        skippedElsewhere: 0,
        claimableUntil,
      });
    } else {
      row.claimableUntil = Math.max(row.claimableUntil, claimableUntil);
      if (busy) row.skippedBusy++;
      else if (row.outcome === 'skipped') Object.assign(row, mine);
      else row.skippedElsewhere++;
    }
    const claimed = this.db.jobRuns.get(key)!;
    const result = claimed.outcome === 'running' && claimed.stamp === stamp ? 'claimed' : busy ? 'busy' : 'elsewhere';
    return { tick, result, dbNow: now };
  }

  async endRun(job: string, tick: number, stamp: number, end: RunEnd): Promise<void> {
    const row = this.db.jobRuns.get(runKey(job, tick));
    if (row?.stamp === stamp) Object.assign(row, { outcome: end.outcome, error: end.error, durationMs: Math.round(end.durationMs) });
  }

  async touchJob({ job, schedule, nextTick }: JobRegistration, succeeded: boolean): Promise<void> {
    const row = this.db.jobs.get(job) ?? { job, schedule, nextTick: null, lastSucceeded: null, updated: 0 };
    row.schedule = schedule;
    row.updated = this.db.now();
    row.nextTick = nextTick ?? row.nextTick;
    if (succeeded) row.lastSucceeded = this.db.now();
    this.db.jobs.set(job, row);
  }

  async listRuns(query: Required<Pick<LockJobRunQuery, 'limit'>> & LockJobRunQuery): Promise<LockJobRun[]> {
    const since = query.since?.getTime();
    return [...this.db.jobRuns.values()]
      .filter((row) => (query.job === undefined || row.job === query.job) && (since === undefined || row.tick >= since))
      .sort((a, b) => b.tick - a.tick || (a.job < b.job ? -1 : a.job > b.job ? 1 : 0))
      .slice(0, query.limit)
      .map((row) => ({
        job: row.job,
        tick: new Date(row.tick),
        outcome: this.abandoned(row) ? 'abandoned' : row.outcome,
        appId: row.appId,
        stamp: row.stamp,
        startedAt: row.started === null ? null : new Date(row.started),
        durationMs: row.durationMs,
        error: row.error,
        skippedBusy: row.skippedBusy,
        skippedElsewhere: row.skippedElsewhere,
        manual: row.manual ?? false,
        actor: row.actor ?? null,
        reason: row.reason ?? null,
      }));
  }

  async listJobs(): Promise<Array<Omit<LockJobInfo, 'lastRuns'>>> {
    const now = this.db.now();
    return [...this.db.jobs.values()]
      .sort((a, b) => (a.job < b.job ? -1 : a.job > b.job ? 1 : 0))
      .map((row) => ({
        job: row.job,
        schedule: row.schedule,
        nextTick: row.nextTick === null ? null : new Date(row.nextTick),
        lastSucceededAt: row.lastSucceeded === null ? null : new Date(row.lastSucceeded),
        lastSucceededAgeSeconds: row.lastSucceeded === null ? null : (now - row.lastSucceeded) / 1000,
        paused: this.pauseOf(row.job),
      }));
  }

  async pruneRuns(retentionMs: number, limit: number): Promise<number> {
    const now = this.db.now();
    const old = [...this.db.jobRuns].filter(
      ([, row]) =>
        row.tick < now - retentionMs && row.claimableUntil < now && (row.outcome !== 'running' || this.abandoned(row)),
    );
    for (const [key] of old.slice(0, limit)) this.db.jobRuns.delete(key);
    return Math.min(old.length, limit);
  }

  async keepJobs(jobs: readonly string[]): Promise<void> {
    const now = this.db.now();
    for (const job of jobs) {
      const row = this.db.jobs.get(job);
      if (row) row.updated = now;
    }
  }

  async retireJobs(idleMs: number): Promise<number> {
    const before = this.db.now() - idleMs;
    const idle = [...this.db.jobs.values()].filter((row) => row.updated < before && !this.db.jobPauses.has(row.job));
    for (const row of idle) this.db.jobs.delete(row.job);
    return idle.length;
  }

  async checkTick(job: string, source: TickSource): Promise<TickCheck> {
    const now = this.db.now();
    const tick = 'at' in source ? source.at : Math.floor(now / source.periodMs) * source.periodMs;
    const row = this.db.jobRuns.get(runKey(job, tick));
    const taken = row !== undefined && row.outcome !== 'skipped';
    if (taken) row.skippedElsewhere++;
    return { tick, taken, dbNow: now };
  }

  async endRunLate(job: string, schedule: string, tick: number, stamp: number, end: RunEnd, endedAgoMs: number): Promise<void> {
    await this.endRun(job, tick, stamp, end);
    const row = this.db.jobs.get(job) ?? { job, schedule, nextTick: null, lastSucceeded: null, updated: 0 };
    row.schedule = schedule;
    row.updated = this.db.now();
    if (end.outcome === 'succeeded') row.lastSucceeded = Math.max(row.lastSucceeded ?? -Infinity, this.db.now() - Math.max(0, endedAgoMs));
    this.db.jobs.set(job, row);
  }

  private pauseOf(job: string): LockJobInfo['paused'] {
    const pause = this.db.jobPauses.get(job);
    return pause === undefined ? null : { actor: pause.actor, reason: pause.reason, since: new Date(pause.since) };
  }

  private act(job: string, action: LockJobActionKind, actor: string, reason: string): void {
    this.db.jobActions.push({ job, action, actor, reason, at: new Date(this.db.now()), changed: true, tick: null });
  }

  async pauseJob(job: string, actor: string, reason: string): Promise<ControlResult> {
    const at = this.db.now();
    if (!this.db.jobs.has(job)) return { found: false, changed: false, at };
    if (this.db.jobPauses.has(job)) return { found: true, changed: false, at };
    this.db.jobPauses.set(job, { actor, reason, since: at });
    this.act(job, 'pause', actor, reason);
    return { found: true, changed: true, at };
  }

  async resumeJob(job: string, actor: string, reason: string): Promise<ControlResult> {
    const at = this.db.now();
    if (!this.db.jobPauses.delete(job)) return { found: this.db.jobs.has(job), changed: false, at };
    this.act(job, 'resume', actor, reason);
    return { found: true, changed: true, at };
  }

  async requestRun(job: string, actor: string, reason: string): Promise<ControlResult> {
    const registered = this.db.jobs.get(job);
    if (!registered) return { found: false, changed: false, at: 0 };
    const tick = await requestAtFreeTick(this.db.now(), registered.schedule, async (at) => {
      const key = runKey(job, at);
      if (this.db.jobRuns.has(key)) return false;
      this.db.jobRuns.set(key, {
        ...{ job, tick: at, outcome: 'requested', appId: null, stamp: null, started: null, durationMs: null, error: null },
        ...{ skippedBusy: 0, skippedElsewhere: 0, claimableUntil: at, manual: true, actor, reason },
      });
      return true;
    });
    this.act(job, 'run', actor, reason);
    return { found: true, changed: true, at: tick };
  }

  async listRequests(jobs: readonly string[]): Promise<RunRequest[]> {
    return [...this.db.jobRuns.values()]
      .filter((row) => row.outcome === 'requested' && jobs.includes(row.job))
      .sort((a, b) => a.tick - b.tick)
      .map((row) => ({ job: row.job, tick: row.tick }));
  }

  async claimRequest(job: string, tick: number, appId: string, stamp: number): Promise<TickClaim> {
    const now = this.db.now();
    const runs = [...this.db.jobRuns.values()].filter((row) => row.job === job && row.outcome === 'running');
    const own = runs.find((row) => row.stamp === stamp);
    if (own) return { tick: own.tick, result: 'claimed', dbNow: now };
    if (runs.some((row) => !this.abandoned(row))) return { tick, result: 'busy', dbNow: now };
    const row = this.db.jobRuns.get(runKey(job, tick));
    if (row?.outcome !== 'requested') return { tick, result: 'elsewhere', dbNow: now };
    Object.assign(row, { outcome: 'running', appId, stamp, started: now });
    return { tick, result: 'claimed', dbNow: now };
  }

  async listActions(query: JobActionQuery): Promise<LockJobAction[]> {
    return this.db.jobActions
      .filter((action) => query.job === undefined || action.job === query.job)
      .slice(-query.limit)
      .reverse();
  }
}
