import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A row of `locking_job`: one scheduled `@WithLocks` job, with its schedule, its next tick and when it last
 * succeeded (database time), kept beyond the pruning of its runs.
 * `LockingJobEntity` on MySQL and MariaDB (times are UTC: read them with the DataSource's `timezone: 'Z'`).
 * @publicApi
 */
@Entity({ name: 'locking_job' })
export class MysqlLockingJobEntity {
  /** The job: `Class.method` (with `@appId` for a per-replica job). */
  @PrimaryColumn({ name: 'job', type: 'varchar', length: 200 })
  job!: string;

  /** Its schedule: `cron <expression>`, `every <ms> ms` or `timeout <ms> ms`. */
  @Column({ name: 'schedule', type: 'varchar', length: 200 })
  schedule!: string;

  /** Its next tick, as the replica that claimed the last one computed it. */
  @Column({ name: 'next_tick', type: 'datetime', precision: 3, nullable: true })
  nextTick!: Date | null;

  /** When its last successful run ended. */
  @Column({ name: 'last_succeeded', type: 'datetime', precision: 6, nullable: true })
  lastSucceeded!: Date | null;

  /** When a replica last wrote this row. */
  @Column({ name: 'updated', type: 'datetime', precision: 6 })
  updated!: Date;
}
