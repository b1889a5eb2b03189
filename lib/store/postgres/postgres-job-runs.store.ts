import type { LockJobAction, LockJobInfo, LockJobRun, LockJobRunQuery } from '../../interfaces/index.js';
import type { PostgresStatementRunner } from './postgres-statement.runner.js';
import {
  type ActionRow,
  type ControlResult,
  type JobActionQuery,
  type JobRegistration,
  type JobRow,
  JobRunStore,
  type RunEnd,
  type RunRequest,
  type RunRow,
  type TickCheck,
  type TickClaim,
  type TickSource,
  claimResolvingLoss,
  requestAtFreeTick,
  toJobAction,
  toJobInfo,
  toJobRun,
} from '../job-runs.store.js';
import * as CONTROL from './postgres-job-controls.queries.sql.js';
import * as SQL from './postgres-job-runs.queries.sql.js';

/** The answer of a claim (`CLAIM_TICK`, `CLAIM_REQUEST`). */
interface ClaimRow {
  tick_ms: number;
  claimed: boolean;
  busy: boolean;
  paused?: boolean;
  now_ms: number;
}

/** A claim's answer as a `TickClaim`. */
function toClaim(row: ClaimRow): TickClaim {
  const result = row.claimed ? 'claimed' : row.paused ? 'paused' : row.busy ? 'busy' : 'elsewhere';
  return { tick: Math.round(Number(row.tick_ms)), result, dbNow: Number(row.now_ms) };
}

/** `JobRunStore` on PostgreSQL: each operation is one statement (a claim, one call of `locking_claim_job_tick`). @internal */
export class PostgresJobRunStore extends JobRunStore {
  constructor(private readonly runner: PostgresStatementRunner) {
    super();
  }

  claim(job: string, tick: TickSource, appId: string, stamp: number | null): Promise<TickClaim> {
    const at = 'at' in tick ? tick.at : null;
    const until = 'at' in tick ? (tick.until ?? null) : null;
    const period = 'periodMs' in tick ? tick.periodMs : null;
    return claimResolvingLoss(stamp, async () => {
      if (stamp === null) {
        // The job's locks were busy: its holder may be recording another tick (the tick is named by the clock), so a
        // tick of a paused job is recorded `paused` here too, never left `skipped`.
        const paused = await this.runner.run<ClaimRow>('claimJobTick', false, {
          text: SQL.RECORD_PAUSED_TICK,
          values: [job, at, period, until],
        });
        if (paused.rows.length > 0) return toClaim(paused.rows[0]!);
      }
      // `grants`: a claim that may have committed without its answer is `outcomeUnknown` (then made again).
      const { rows } = await this.runner.run<ClaimRow>('claimJobTick', true, {
        text: SQL.CLAIM_TICK,
        values: [job, at, period, appId, stamp, until],
      });
      return toClaim(rows[0]!);
    });
  }

  async endRun(job: string, tick: number, stamp: number, end: RunEnd): Promise<void> {
    await this.runner.run('endJobRun', false, {
      text: SQL.END_RUN,
      values: [job, tick, stamp, end.outcome, end.error, Math.round(end.durationMs)],
    });
  }

  async touchJob({ job, schedule, nextTick }: JobRegistration, succeeded: boolean): Promise<void> {
    await this.runner.run('touchJob', false, { text: SQL.TOUCH_JOB, values: [job, schedule, nextTick, succeeded] });
  }

  async listRuns(query: Required<Pick<LockJobRunQuery, 'limit'>> & LockJobRunQuery): Promise<LockJobRun[]> {
    const { rows } = await this.runner.run<RunRow>('getJobRuns', false, {
      text: SQL.SELECT_RUNS,
      values: [query.job ?? null, query.since ?? null, query.limit],
    });
    return rows.map(toJobRun);
  }

  async listJobs(): Promise<Array<Omit<LockJobInfo, 'lastRuns'>>> {
    const { rows } = await this.runner.run<JobRow>('getJobs', false, { text: SQL.SELECT_JOBS });
    return rows.map(toJobInfo);
  }

  async pruneRuns(retentionMs: number, limit: number): Promise<number> {
    const result = await this.runner.run('pruneJobRuns', false, { text: SQL.PRUNE_RUNS, values: [retentionMs, limit] });
    return result.rowCount ?? 0;
  }

  async keepJobs(jobs: readonly string[]): Promise<void> {
    if (jobs.length > 0) await this.runner.run('keepJobs', false, { text: SQL.KEEP_JOBS, values: [[...jobs]] });
  }

  async retireJobs(idleMs: number): Promise<number> {
    const result = await this.runner.run('retireJobs', false, { text: SQL.RETIRE_JOBS, values: [idleMs] });
    return result.rowCount ?? 0;
  }

  async checkTick(job: string, tick: TickSource): Promise<TickCheck> {
    const at = 'at' in tick ? tick.at : null;
    const period = 'periodMs' in tick ? tick.periodMs : null;
    const { rows } = await this.runner.run<{ tick_ms: number; taken: boolean; now_ms: number }>('checkJobTick', false, {
      text: SQL.CHECK_TICK,
      values: [job, at, period],
    });
    const row = rows[0]!;
    return { tick: Math.round(Number(row.tick_ms)), taken: row.taken, dbNow: Number(row.now_ms) };
  }

  async endRunLate(job: string, schedule: string, tick: number, stamp: number, end: RunEnd, endedAgoMs: number): Promise<void> {
    await this.runner.run('endJobRunLate', false, {
      text: SQL.END_RUN_LATE,
      values: [job, tick, stamp, end.outcome, end.error, Math.round(end.durationMs), schedule, Math.max(0, endedAgoMs)],
    });
  }

  pauseJob(job: string, actor: string, reason: string): Promise<ControlResult> {
    return this.control('pauseJob', CONTROL.PAUSE_JOB, [job, actor, reason]);
  }

  resumeJob(job: string, actor: string, reason: string): Promise<ControlResult> {
    return this.control('resumeJob', CONTROL.RESUME_JOB, [job, actor, reason]);
  }

  private async control(name: string, text: string, values: unknown[]): Promise<ControlResult> {
    const { rows } = await this.runner.run<{ found: boolean; changed: boolean; now_ms: number }>(name, false, { text, values });
    const row = rows[0]!;
    return { found: row.found, changed: row.changed, at: Number(row.now_ms) };
  }

  async requestRun(job: string, actor: string, reason: string): Promise<ControlResult> {
    const { rows } = await this.runner.run<{ schedule: string; now_ms: number }>('selectJobClock', false, {
      text: CONTROL.SELECT_JOB_CLOCK,
      values: [job],
    });
    if (rows.length === 0) return { found: false, changed: false, at: 0 };
    const tick = await requestAtFreeTick(Number(rows[0]!.now_ms), rows[0]!.schedule, async (at) => {
      const made = await this.runner.run('requestJobRun', false, { text: CONTROL.REQUEST_RUN, values: [job, at, actor, reason] });
      return made.rows.length > 0;
    });
    return { found: true, changed: true, at: tick };
  }

  async listRequests(jobs: readonly string[]): Promise<RunRequest[]> {
    if (jobs.length === 0) return [];
    const { rows } = await this.runner.run<{ job: string; tick_ms: number }>('getJobRequests', false, {
      text: CONTROL.SELECT_REQUESTS,
      values: [[...jobs]],
    });
    return rows.map((row) => ({ job: row.job, tick: Math.round(Number(row.tick_ms)) }));
  }

  claimRequest(job: string, tick: number, appId: string, stamp: number): Promise<TickClaim> {
    return claimResolvingLoss(stamp, async () => {
      const { rows } = await this.runner.run<ClaimRow>('claimJobRequest', true, {
        text: CONTROL.CLAIM_REQUEST,
        values: [job, tick, appId, stamp],
      });
      return toClaim(rows[0]!);
    });
  }

  async listActions(query: JobActionQuery): Promise<LockJobAction[]> {
    const { rows } = await this.runner.run<ActionRow>('getJobActions', false, {
      text: CONTROL.SELECT_ACTIONS,
      values: [query.job ?? null, query.limit],
    });
    return rows.map(toJobAction);
  }
}
