import { LockingLogEntity } from './locking-log.entity.js';
import { LockingPermissionEntity } from './locking-permission.entity.js';
import { LockingEntity } from './locking.entity.js';

export { LockingEntity } from './locking.entity.js';
export { LockingPermissionEntity } from './locking-permission.entity.js';
export { LockingLogEntity } from './locking-log.entity.js';

/**
 * The entities of the lock tables, for `TypeOrmModule.forRoot({ entities: [...LOCK_ENTITIES] })`. `LockModule`
 * also registers them with `TypeOrmModule.forFeature`, so `autoLoadEntities: true` finds them.
 * @publicApi
 */
export const LOCK_ENTITIES = [LockingEntity, LockingPermissionEntity, LockingLogEntity] as const;
