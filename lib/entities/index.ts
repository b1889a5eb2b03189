import { LockingLogEntity } from './locking-log.entity.js';
import { LockingPermissionEntity } from './locking-permission.entity.js';
import { LockingEntity } from './locking.entity.js';
import { MysqlLockingLogEntity } from './mysql/locking-log.entity.js';
import { MysqlLockingEntity } from './mysql/locking.entity.js';

export { LockingEntity } from './locking.entity.js';
export { LockingPermissionEntity } from './locking-permission.entity.js';
export { LockingLogEntity } from './locking-log.entity.js';
export { MysqlLockingEntity } from './mysql/locking.entity.js';
export { MysqlLockingLogEntity } from './mysql/locking-log.entity.js';

/**
 * The entities of the lock tables, for `TypeOrmModule.forRoot({ entities: [...LOCK_ENTITIES] })`. `LockModule`
 * also registers them with `TypeOrmModule.forFeature`, so `autoLoadEntities: true` finds them.
 * @publicApi
 */
export const LOCK_ENTITIES = [LockingEntity, LockingPermissionEntity, LockingLogEntity] as const;

/**
 * The entities of the lock tables on MySQL and MariaDB (`LockingPermissionEntity` is the same on every database).
 * `LockModule.forRoot({ ..., dialect: 'mysql' })` registers them instead of `LOCK_ENTITIES`.
 * @publicApi
 */
export const LOCK_MYSQL_ENTITIES = [MysqlLockingEntity, LockingPermissionEntity, MysqlLockingLogEntity] as const;
