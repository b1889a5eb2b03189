import { Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import type { LockLogStatus } from '../../interfaces/index.js';
import { bigintAsNumber } from '../bigint-as-number.transformer.js';

/**
 * `LockingLogEntity` on MySQL and MariaDB: a row of `locking_log`, one per grant, with the same statuses. The group's
 * names and modes are JSON arrays; times are UTC (read them with the DataSource's `timezone: 'Z'`).
 * @publicApi
 */
@Entity({ name: 'locking_log' })
export class MysqlLockingLogEntity {
  /** The grant's stamp (and fencing token), from the table's `AUTO_INCREMENT`. */
  @PrimaryColumn({ name: 'stamp', type: 'bigint', transformer: bigintAsNumber })
  @Generated('increment') // else TypeORM's `synchronize` drops the column (and every stamp) to remove AUTO_INCREMENT
  stamp!: number;

  /** The `appId` that took it. */
  @Column({ name: 'app_id', type: 'varchar', length: 200 })
  appId!: string;

  /** The process that took it. */
  @Column({ name: 'instance', type: 'varchar', length: 200 })
  instance!: string;

  /** Names of the group's locks. */
  @Column({ name: 'lock_names', type: 'json' })
  lockNames!: string[];

  /** Modes of the group's locks, `'R'` or `'W'`, aligned with `lockNames`. */
  @Column({ name: 'lock_modes', type: 'json' })
  lockModes!: Array<'R' | 'W'>;

  /** Where the grant is in its life. */
  @Column({ name: 'status', type: 'varchar', length: 16 })
  status!: LockLogStatus;

  /** When it was granted. */
  @Index('locking_log_acquired_idx')
  @Column({ name: 'acquired', type: 'datetime', precision: 6 })
  acquired!: Date;

  /** When its lease expires unless renewed. */
  @Column({ name: 'lease_expires', type: 'datetime', precision: 6 })
  leaseExpires!: Date;

  /** When `markBusinessDone` recorded the business step. */
  @Column({ name: 'business_done', type: 'datetime', precision: 6, nullable: true })
  businessDone!: Date | null;

  /** When it was released, reaped, recovered or forced. */
  @Column({ name: 'ended', type: 'datetime', precision: 6, nullable: true })
  ended!: Date | null;

  /** Who forced its release (FORCED only). */
  @Column({ name: 'ended_by', type: 'varchar', length: 200, nullable: true })
  endedBy!: string | null;

  /** Why its release was forced (FORCED only). */
  @Column({ name: 'end_reason', type: 'varchar', length: 500, nullable: true })
  endReason!: string | null;

  /** Incremented by every update. */
  @Column({ name: 'version', type: 'int', default: 1 })
  version!: number;
}
