import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintAsNumber } from '../bigint-as-number.transformer.js';

/**
 * `LockingEntity` on MySQL and MariaDB: a row of `locking`, one lock of one granted group. The engine writes it with
 * its own SQL; the entity is here to read the table with TypeORM. Times are UTC: read them with the DataSource's
 * `timezone: 'Z'`. Create the table with the shipped migration (`LOCK_MIGRATIONS`), not with `synchronize`.
 * @publicApi
 */
@Entity({ name: 'locking' })
export class MysqlLockingEntity {
  /** The lock's name. */
  @PrimaryColumn({ name: 'lock_name', type: 'varchar', length: 200 })
  lockName!: string;

  /** `'R'` (read) or `'W'` (write). */
  @PrimaryColumn({ name: 'mode', type: 'char', length: 1 })
  mode!: 'R' | 'W';

  /** The stamp `tryLocks` returned for the group this row belongs to. */
  @Index('locking_stamp_idx')
  @PrimaryColumn({ name: 'stamp', type: 'bigint', transformer: bigintAsNumber })
  stamp!: number;

  /** The `appId` of the instance that holds it. */
  @Column({ name: 'app_id', type: 'varchar', length: 200 })
  appId!: string;

  /** When it was granted, in database time (UTC). */
  @Column({ name: 'created', type: 'datetime', precision: 6 })
  created!: Date;
}
