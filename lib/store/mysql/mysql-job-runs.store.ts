import type { LockJobAction, LockJobInfo, LockJobRun, LockJobRunQuery } from '../../interfaces/index.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';
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
import * as CONTROL from './mysql-job-controls.queries.sql.js';
import * as SQL from './mysql-job-runs.queries.sql.js';

/** Epoch ms as a UTC `DATETIME(3)` literal (the driver would convert a Date in the client's time zone). */
const datetimeOf = (ms: number): string => new Date(ms).toISOString().slice(0, 23).replace('T', ' ');

/**
 * `JobRunStore` on MySQL and MariaDB: a claim is one transaction of up to five statements (the job's row locked
 * first), the rest one statement each. @internal
 */
export class MysqlJobRunStore extends JobRunStore {
  constructor(private readonly runner: MysqlStatementRunner) {
    super();
  }

  claim(job: string, source: TickSource, appId: string, stamp: number | null): Promise<TickClaim> {
    // `grants`: a claim whose COMMIT was sent and whose answer was lost is `outcomeUnknown` (then made again).
    return claimResolvingLoss(stamp, () => this.runner.transaction('claimJobTick', true, async (tx) => {
      if (stamp !== null && (await tx.write(SQL.TAKE_JOB, [job])).affectedRows === 0) await tx.write(SQL.ADD_JOB, [job]);
      let tick: number;
      if ('at' in source) {
        tick = source.at;
      } else {
        const [slot] = await tx.select<{ slot_ms: string | number }>(SQL.SELECT_SLOT, [source.periodMs, source.periodMs]);
        tick = Number(slot!.slot_ms);
      }
      const at = datetimeOf(tick);
      const until = 'at' in source ? Math.max(tick, source.until ?? tick) : tick + source.periodMs;
      let busy = stamp === null;
      if (!busy) {
        const [row] = await tx.select<{ own_ms: string | number | null; busy: number | string; now_ms: string | number }>(
          SQL.SELECT_OWN_AND_BUSY,
          [job, stamp, job, at],
        );
        if (row!.own_ms !== null) return { tick: Math.round(Number(row!.own_ms)), result: 'claimed', dbNow: Number(row!.now_ms) };
        busy = Number(row!.busy) === 1;
      }
      // A paused job (the pause is read after the job's row is locked): the tick is recorded `paused`, not run. Also by
      // a replica that found the job's locks busy: their holder may be recording another tick (the tick is named by
      // the clock), so the tick is never left `skipped`.
      const [pause] = await tx.select<{ actor: string; reason: string; now_ms: string | number }>(CONTROL.SELECT_PAUSE, [job]);
      if (pause !== undefined) {
        await tx.write(CONTROL.UPSERT_PAUSED_TICK, [job, at, pause.actor, pause.reason, datetimeOf(until)]);
        return { tick, result: 'paused', dbNow: Number(pause.now_ms) };
      }
      const outcome = busy ? 'skipped' : 'running';
      const runStamp = busy ? null : stamp;
      await tx.write(SQL.UPSERT_TICK, [job, at, outcome, busy ? null : appId, runStamp, runStamp, busy ? 1 : 0, datetimeOf(until)]);
      const [held] = await tx.select<{ outcome: string; stamp: string | number | null; now_ms: string | number }>(
        SQL.SELECT_TICK,
        [job, at],
      );
      const claimed = held!.outcome === 'running' && runStamp !== null && Number(held!.stamp) === runStamp;
      return { tick, result: claimed ? 'claimed' : busy ? 'busy' : 'elsewhere', dbNow: Number(held!.now_ms) };
    }));
  }

  async endRun(job: string, tick: number, stamp: number, end: RunEnd): Promise<void> {
    await this.runner.write('endJobRun', SQL.END_RUN, [
      end.outcome,
      end.error,
      Math.round(end.durationMs),
      job,
      datetimeOf(tick),
      stamp,
    ]);
  }

  async touchJob({ job, schedule, nextTick }: JobRegistration, succeeded: boolean): Promise<void> {
    const next = nextTick === null ? null : datetimeOf(nextTick);
    await this.runner.write('touchJob', SQL.TOUCH_JOB, [job, schedule, next, succeeded ? 1 : 0]);
  }

  async listRuns(query: Required<Pick<LockJobRunQuery, 'limit'>> & LockJobRunQuery): Promise<LockJobRun[]> {
    const job = query.job ?? null;
    const since = query.since ? datetimeOf(query.since.getTime()) : null;
    const rows = await this.runner.select<RunRow>('getJobRuns', SQL.SELECT_RUNS, [job, job, since, since, query.limit]);
    return rows.map(toJobRun);
  }

  async listJobs(): Promise<Array<Omit<LockJobInfo, 'lastRuns'>>> {
    const rows = await this.runner.select<JobRow>('getJobs', SQL.SELECT_JOBS);
    return rows.map(toJobInfo);
  }

  async pruneRuns(retentionMs: number, limit: number): Promise<number> {
    const { affectedRows } = await this.runner.write('pruneJobRuns', SQL.PRUNE_RUNS, [retentionMs, limit]);
    return affectedRows;
  }

  async keepJobs(jobs: readonly string[]): Promise<void> {
    if (jobs.length > 0) await this.runner.write('keepJobs', SQL.KEEP_JOBS, [[...jobs]]);
  }

  async retireJobs(idleMs: number): Promise<number> {
    const { affectedRows } = await this.runner.write('retireJobs', SQL.RETIRE_JOBS, [idleMs]);
    return affectedRows;
  }

  /** One SELECT; a second statement counts this replica when the tick is claimed already. */
  async checkTick(job: string, source: TickSource): Promise<TickCheck> {
    const at = 'at' in source ? source.at : null;
    const period = 'periodMs' in source ? source.periodMs : 1;
    const [row] = await this.runner.select<{ tick_ms: string | number; now_ms: string | number; taken: string | number }>(
      'checkJobTick',
      SQL.CHECK_TICK,
      [job, at, period, period],
    );
    const tick = Math.round(Number(row!.tick_ms));
    const taken = Number(row!.taken) === 1;
    if (taken) await this.runner.write('countJobTickElsewhere', SQL.COUNT_ELSEWHERE, [job, datetimeOf(tick)]);
    return { tick, taken, dbNow: Number(row!.now_ms) };
  }

  endRunLate(job: string, schedule: string, tick: number, stamp: number, end: RunEnd, endedAgoMs: number): Promise<void> {
    return this.runner.transaction('endJobRunLate', false, async (tx) => {
      await tx.write(SQL.END_RUN, [end.outcome, end.error, Math.round(end.durationMs), job, datetimeOf(tick), stamp]);
      const succeeded = end.outcome === 'succeeded' ? 1 : 0;
      await tx.write(SQL.TOUCH_JOB_LATE, [job, schedule, succeeded, Math.max(0, Math.round(endedAgoMs))]);
    });
  }

  /** One transaction: the job's row locked (the claims of the job wait), the pause checked, changed, and the action. */
  pauseJob(job: string, actor: string, reason: string): Promise<ControlResult> {
    return this.runner.transaction('pauseJob', false, async (tx) => {
      await tx.write(SQL.TAKE_JOB, [job]);
      const [row] = await tx.select<{ now_ms: string | number }>(CONTROL.SELECT_JOB_CLOCK, [job]);
      if (row === undefined) return { found: false, changed: false, at: 0 };
      const at = Number(row.now_ms);
      if ((await tx.select<unknown>(CONTROL.SELECT_PAUSED, [job])).length > 0) return { found: true, changed: false, at };
      await tx.write(CONTROL.INSERT_PAUSE, [job, actor, reason]);
      await tx.write(CONTROL.INSERT_ACTION, [job, 'pause', actor, reason]);
      return { found: true, changed: true, at };
    });
  }

  /** One transaction, as `pauseJob`; a paused job whose row was retired is still found (its pause). */
  resumeJob(job: string, actor: string, reason: string): Promise<ControlResult> {
    return this.runner.transaction('resumeJob', false, async (tx) => {
      await tx.write(SQL.TAKE_JOB, [job]);
      const [row] = await tx.select<{ now_ms: string | number }>(CONTROL.SELECT_JOB_CLOCK, [job]);
      const paused = (await tx.select<unknown>(CONTROL.SELECT_PAUSED, [job])).length > 0;
      const at = row === undefined ? 0 : Number(row.now_ms);
      if (!paused) return { found: row !== undefined, changed: false, at };
      await tx.write(CONTROL.DELETE_PAUSE, [job]);
      await tx.write(CONTROL.INSERT_ACTION, [job, 'resume', actor, reason]);
      return { found: true, changed: true, at };
    });
  }

  requestRun(job: string, actor: string, reason: string): Promise<ControlResult> {
    return this.runner.transaction('requestJobRun', false, async (tx) => {
      await tx.write(SQL.TAKE_JOB, [job]);
      const [row] = await tx.select<{ schedule: string; now_ms: string | number }>(CONTROL.SELECT_JOB_CLOCK, [job]);
      if (row === undefined) return { found: false, changed: false, at: 0 };
      const tick = await requestAtFreeTick(Number(row.now_ms), row.schedule, async (at) => {
        const { affectedRows } = await tx.write(CONTROL.INSERT_REQUEST, [job, datetimeOf(at), actor, reason]);
        return affectedRows > 0;
      });
      await tx.write(CONTROL.INSERT_ACTION, [job, 'run', actor, reason]);
      return { found: true, changed: true, at: tick };
    });
  }

  async listRequests(jobs: readonly string[]): Promise<RunRequest[]> {
    if (jobs.length === 0) return [];
    const rows = await this.runner.select<{ job: string; tick_ms: string | number }>('getJobRequests', CONTROL.SELECT_REQUESTS, [[...jobs]]);
    return rows.map((row) => ({ job: row.job, tick: Math.round(Number(row.tick_ms)) }));
  }

  /** One transaction: the job's row locked (as a claim of a tick), then the own run, the busy check and the claim. */
  claimRequest(job: string, tick: number, appId: string, stamp: number): Promise<TickClaim> {
    return claimResolvingLoss(stamp, () => this.runner.transaction('claimJobRequest', true, async (tx) => {
      if ((await tx.write(SQL.TAKE_JOB, [job])).affectedRows === 0) await tx.write(SQL.ADD_JOB, [job]);
      const [own] = await tx.select<{ own_ms: string | number }>(CONTROL.SELECT_OWN, [job, stamp]);
      const [running] = await tx.select<{ busy: string | number; now_ms: string | number }>(CONTROL.SELECT_RUNNING, [job]);
      const dbNow = Number(running!.now_ms);
      if (own !== undefined) return { tick: Math.round(Number(own.own_ms)), result: 'claimed', dbNow };
      if (Number(running!.busy) === 1) return { tick, result: 'busy', dbNow };
      const { affectedRows } = await tx.write(CONTROL.CLAIM_REQUEST, [appId, stamp, job, datetimeOf(tick)]);
      return { tick, result: affectedRows > 0 ? 'claimed' : 'elsewhere', dbNow };
    }));
  }

  async listActions(query: JobActionQuery): Promise<LockJobAction[]> {
    const job = query.job ?? null;
    const rows = await this.runner.select<ActionRow>('getJobActions', CONTROL.SELECT_ACTIONS, [job, job, query.limit]);
    return rows.map(toJobAction);
  }
}
