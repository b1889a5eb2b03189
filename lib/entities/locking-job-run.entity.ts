import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { LockJobOutcome } from '../interfaces/index.js';
import { bigintAsNumber } from './bigint-as-number.transformer.js';

/**
 * A row of `locking_job_run`: one tick of a scheduled `@WithLocks` job, claimed by the replica that ran it (its
 * primary key is what makes a tick run once across the fleet), with its outcome. Times are database time, except
 * `tick` (see `LockJobRun`). `LockAdminService.getJobRuns` reads it with the outcome `'abandoned'` worked out.
 * @publicApi
 */
@Entity({ name: 'locking_job_run' })
@Check('locking_job_run_outcome_check', `outcome IN ('running', 'succeeded', 'failed', 'lock-lost', 'skipped', 'paused', 'requested')`)
export class LockingJobRunEntity {
  /** The job: `Class.method` (with `@appId` for a per-replica job). */
  // A partial index a migration creates (the runs still going, by job); `synchronize` must leave it alone.
  @Index('locking_job_run_running_idx', { synchronize: false })
  // Another (the "run now" requests not claimed yet, by job: JobControls1796800000000).
  @Index('locking_job_run_requested_idx', { synchronize: false })
  @PrimaryColumn({ name: 'job', type: 'varchar', length: 200, primaryKeyConstraintName: 'locking_job_run_pk' })
  job!: string;

  /** The tick. */
  @Index('locking_job_run_tick_idx')
  @PrimaryColumn({ name: 'tick', type: 'timestamptz', primaryKeyConstraintName: 'locking_job_run_pk' })
  tick!: Date;

  /** How the run ended, or `'running'`, or `'skipped'` when no replica ran the tick. */
  @Column({ name: 'outcome', type: 'varchar', length: 16 })
  outcome!: Exclude<LockJobOutcome, 'abandoned'>;

  /** The replica that ran it. */
  @Column({ name: 'app_id', type: 'varchar', length: 200, nullable: true })
  appId!: string | null;

  /** The stamp of the grant it ran under. */
  @Column({ name: 'stamp', type: 'bigint', nullable: true, transformer: bigintAsNumber })
  stamp!: number | null;

  /** When the run started. */
  @Column({ name: 'started', type: 'timestamptz', nullable: true })
  started!: Date | null;

  /** How long the method ran (ms). */
  @Column({ name: 'duration_ms', type: 'integer', nullable: true })
  durationMs!: number | null;

  /** The error's class name (failed, lock-lost). */
  @Column({ name: 'error', type: 'varchar', length: 200, nullable: true })
  error!: string | null;

  /** Replicas that found the job busy at this tick. */
  @Column({ name: 'skipped_busy', type: 'integer', default: 0 })
  skippedBusy!: number;

  /** Replicas that came to this tick after another had claimed it. */
  @Column({ name: 'skipped_elsewhere', type: 'integer', default: 0 })
  skippedElsewhere!: number;

  /** Until when the tick can still be claimed (a period's end, a cron tick's next fire time): kept until then. */
  @Column({ name: 'claimable_until', type: 'timestamptz', nullable: true })
  claimableUntil!: Date | null;

  /** A "run now" (`LockAdminService.runJobNow`), not a tick of the schedule. */
  @Column({ name: 'manual', type: 'boolean', default: false })
  manual!: boolean;

  /** Who asked for the manual run, or paused the job (a `paused` tick). */
  @Column({ name: 'actor', type: 'varchar', length: 200, nullable: true })
  actor!: string | null;

  /** Why. */
  @Column({ name: 'reason', type: 'varchar', length: 500, nullable: true })
  reason!: string | null;
}
