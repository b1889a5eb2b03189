import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintAsNumber } from './bigint-as-number.transformer.js';
import type { LockLogStatus } from '../interfaces/index.js';


/**
 * A row of `locking_log` (seed 002's lock log): one per grant, written in the same transaction as each state change.
 * Statuses: ACQUIRED → BUSINESS_DONE → RELEASED, or → REAPED (lease expired, freed by a reaper), or → RECOVERED
 * (freed at its instance's restart), or → FORCED (freed by `LockAdminService.forceRelease`). Times are database time.
 * @publicApi
 */
@Entity({ name: 'locking_log' })
export class LockingLogEntity {
  /** The grant's stamp (and fencing token). */
  @PrimaryColumn({ name: 'stamp', type: 'bigint', transformer: bigintAsNumber })
  stamp!: number;

  /** The `appId` that took it. */
  @Column({ name: 'app_id', type: 'varchar', length: 200 })
  appId!: string;

  /** The process that took it. */
  @Column({ name: 'instance', type: 'varchar', length: 200 })
  instance!: string;

  /** Names of the group's locks. */
  @Column({ name: 'lock_names', type: 'varchar', length: 200, array: true })
  lockNames!: string[];

  /** Modes of the group's locks, `'R'` or `'W'`, aligned with `lockNames`. */
  @Column({ name: 'lock_modes', type: 'char', length: 1, array: true })
  lockModes!: Array<'R' | 'W'>;

  /** Where the grant is in its life. */
  @Column({ name: 'status', type: 'varchar', length: 16 })
  status!: LockLogStatus;

  /** When it was granted. */
  // A BRIN index the migration creates; TypeORM cannot declare BRIN, so `synchronize` must leave it alone.
  @Index('locking_log_acquired_brin', { synchronize: false })
  @Column({ name: 'acquired', type: 'timestamptz', default: () => 'now()' })
  acquired!: Date;

  /** When its lease expires unless renewed. */
  @Column({ name: 'lease_expires', type: 'timestamptz' })
  leaseExpires!: Date;

  /** When `markBusinessDone` recorded the business step. */
  @Column({ name: 'business_done', type: 'timestamptz', nullable: true })
  businessDone!: Date | null;

  /** When it was released, reaped, recovered or forced. */
  @Column({ name: 'ended', type: 'timestamptz', nullable: true })
  ended!: Date | null;

  /** Who forced its release (FORCED only). */
  @Column({ name: 'ended_by', type: 'varchar', length: 200, nullable: true })
  endedBy!: string | null;

  /** Why its release was forced (FORCED only). */
  @Column({ name: 'end_reason', type: 'varchar', length: 500, nullable: true })
  endReason!: string | null;

  /** Incremented by every update (optimistic concurrency, seed 002). */
  @Column({ name: 'version', type: 'integer', default: 1 })
  version!: number;
}
