import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A row of `locking_permissions`: the permits of one (name, mode), overriding `defaultPermits`. Operators may change
 * this table with plain SQL; grants read it in the acquiring statement, caches pick it up on their next refresh.
 * @publicApi
 */
@Entity({ name: 'locking_permissions' })
@Check('locking_permissions_mode_ck', `mode IN ('R', 'W')`)
@Check('locking_permissions_permits_ck', `permits >= 1`)
export class LockingPermissionEntity {
  /** The lock's name. */
  @PrimaryColumn({ name: 'lock_name', type: 'varchar', length: 200, primaryKeyConstraintName: 'locking_permissions_pk' })
  lockName!: string;

  /** `'R'` (read) or `'W'` (write). */
  @PrimaryColumn({ name: 'mode', type: 'char', length: 1, primaryKeyConstraintName: 'locking_permissions_pk' })
  mode!: 'R' | 'W';

  /** How many holders of this mode may hold the name at once (≥ 1). */
  @Column({ name: 'permits', type: 'integer' })
  permits!: number;
}
