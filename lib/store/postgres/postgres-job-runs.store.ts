import type { LockJobInfo, LockJobRun, LockJobRunQuery } from '../../interfaces/index.js';
import type { PostgresStatementRunner } from './postgres-statement.runner.js';
import {
  type JobRegistration,
  type JobRow,
  JobRunStore,
  type RunEnd,
  type RunRow,
  type TickCheck,
  type TickClaim,
  type TickSource,
  claimResolvingLoss,
  toJobInfo,
  toJobRun,
} from '../job-runs.store.js';
import * as SQL from './postgres-job-runs.queries.sql.js';

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
      // `grants`: a claim that may have committed without its answer is `outcomeUnknown` (then made again).
      const { rows } = await this.runner.run<{ tick_ms: number; claimed: boolean; busy: boolean; now_ms: number }>(
        'claimJobTick',
        true,
        { text: SQL.CLAIM_TICK, values: [job, at, period, appId, stamp, until] },
      );
      const row = rows[0]!;
      const result = row.claimed ? 'claimed' : row.busy ? 'busy' : 'elsewhere';
      return { tick: Math.round(Number(row.tick_ms)), result, dbNow: Number(row.now_ms) };
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
}
