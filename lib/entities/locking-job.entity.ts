import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A row of `locking_job`: one scheduled `@WithLocks` job, with its schedule, its next tick and when it last
 * succeeded (database time), kept beyond the pruning of its runs.
 * @publicApi
 */
@Entity({ name: 'locking_job' })
export class LockingJobEntity {
  /** The job: `Class.method` (with `@appId` for a per-replica job). */
  @PrimaryColumn({ name: 'job', type: 'varchar', length: 200, primaryKeyConstraintName: 'locking_job_pk' })
  job!: string;

  /** Its schedule: `cron <expression>`, `every <ms> ms` or `timeout <ms> ms`. */
  @Column({ name: 'schedule', type: 'varchar', length: 200 })
  schedule!: string;

  /** Its next tick, as the replica that claimed the last one computed it. */
  @Column({ name: 'next_tick', type: 'timestamptz', nullable: true })
  nextTick!: Date | null;

  /** When its last successful run ended. */
  @Column({ name: 'last_succeeded', type: 'timestamptz', nullable: true })
  lastSucceeded!: Date | null;

  /** When a replica last wrote this row. */
  @Column({ name: 'updated', type: 'timestamptz', default: () => 'now()' })
  updated!: Date;
}
