import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { LockJobOutcome } from '../../interfaces/index.js';
import { bigintAsNumber } from '../bigint-as-number.transformer.js';

/**
 * A row of `locking_job_run`: one tick of a scheduled `@WithLocks` job, claimed by the replica that ran it (its
 * primary key is what makes a tick run once across the fleet), with its outcome. Times are database time, except
 * `tick` (see `LockJobRun`). `LockAdminService.getJobRuns` reads it with the outcome `'abandoned'` worked out.
 * `LockingJobRunEntity` on MySQL and MariaDB (times are UTC: read them with the DataSource's `timezone: 'Z'`).
 * @publicApi
 */
@Entity({ name: 'locking_job_run' })
@Index('locking_job_run_running_idx', ['job', 'outcome'])
@Check('locking_job_run_outcome_check', `outcome IN ('running', 'succeeded', 'failed', 'lock-lost', 'skipped', 'paused', 'requested')`)
export class MysqlLockingJobRunEntity {
  /** The job: `Class.method` (with `@appId` for a per-replica job). */
  @PrimaryColumn({ name: 'job', type: 'varchar', length: 200 })
  job!: string;

  /** The tick. */
  @Index('locking_job_run_tick_idx')
  @PrimaryColumn({ name: 'tick', type: 'datetime', precision: 3 })
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
  @Column({ name: 'started', type: 'datetime', precision: 6, nullable: true })
  started!: Date | null;

  /** How long the method ran (ms). */
  @Column({ name: 'duration_ms', type: 'int', nullable: true })
  durationMs!: number | null;

  /** The error's class name (failed, lock-lost). */
  @Column({ name: 'error', type: 'varchar', length: 200, nullable: true })
  error!: string | null;

  /** Replicas that found the job busy at this tick. */
  @Column({ name: 'skipped_busy', type: 'int', default: 0 })
  skippedBusy!: number;

  /** Replicas that came to this tick after another had claimed it. */
  @Column({ name: 'skipped_elsewhere', type: 'int', default: 0 })
  skippedElsewhere!: number;

  /** Until when the tick can still be claimed (a period's end, a cron tick's next fire time): kept until then. */
  @Column({ name: 'claimable_until', type: 'datetime', precision: 3, nullable: true })
  claimableUntil!: Date | null;

  /** A "run now" (`LockAdminService.runJobNow`), not a tick of the schedule. */
  @Column({ name: 'manual', type: 'tinyint', default: 0 })
  manual!: number;

  /** Who asked for the manual run, or paused the job (a `paused` tick). */
  @Column({ name: 'actor', type: 'varchar', length: 200, nullable: true })
  actor!: string | null;

  /** Why. */
  @Column({ name: 'reason', type: 'varchar', length: 500, nullable: true })
  reason!: string | null;
}
