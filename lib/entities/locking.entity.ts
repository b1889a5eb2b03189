import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { bigintAsNumber } from './bigint-as-number.transformer.js';


/**
 * A row of `locking` (seed 000's main table): one lock of one granted group. The engine writes it with its own SQL;
 * the entity is here to read the table with TypeORM and for `autoLoadEntities`. Create the table with the shipped
 * migration (`LOCK_MIGRATIONS`), not with `synchronize`.
 * @publicApi
 */
@Entity({ name: 'locking' })
export class LockingEntity {
  /** The lock's name. */
  @PrimaryColumn({ name: 'lock_name', type: 'varchar', length: 200, primaryKeyConstraintName: 'locking_pk' })
  lockName!: string;

  /** `'R'` (read) or `'W'` (write). */
  @PrimaryColumn({ name: 'mode', type: 'char', length: 1, primaryKeyConstraintName: 'locking_pk' })
  mode!: 'R' | 'W';

  /** The stamp `tryLocks` returned for the group this row belongs to. */
  @Index('locking_stamp_idx')
  @PrimaryColumn({ name: 'stamp', type: 'bigint', transformer: bigintAsNumber, primaryKeyConstraintName: 'locking_pk' })
  stamp!: number;

  /** The `appId` of the instance that holds it. */
  @Column({ name: 'app_id', type: 'varchar', length: 200 })
  appId!: string;

  /** When it was granted, in database time. */
  @Column({ name: 'created', type: 'timestamptz', default: () => 'now()' })
  created!: Date;
}
