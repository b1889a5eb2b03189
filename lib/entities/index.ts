import { LockingLogEntity } from './locking-log.entity.js';
import { LockingPermissionEntity } from './locking-permission.entity.js';
import { LockingEntity } from './locking.entity.js';
import { LockingJobRunEntity } from './locking-job-run.entity.js';
import { LockingJobEntity } from './locking-job.entity.js';
import { MysqlLockingJobRunEntity } from './mysql/locking-job-run.entity.js';
import { MysqlLockingJobEntity } from './mysql/locking-job.entity.js';
import { MysqlLockingLogEntity } from './mysql/locking-log.entity.js';
import { MysqlLockingEntity } from './mysql/locking.entity.js';

export { LockingEntity } from './locking.entity.js';
export { LockingPermissionEntity } from './locking-permission.entity.js';
export { LockingLogEntity } from './locking-log.entity.js';
export { MysqlLockingEntity } from './mysql/locking.entity.js';
export { MysqlLockingLogEntity } from './mysql/locking-log.entity.js';
export { LockingJobRunEntity } from './locking-job-run.entity.js';
export { LockingJobEntity } from './locking-job.entity.js';
export { MysqlLockingJobRunEntity } from './mysql/locking-job-run.entity.js';
export { MysqlLockingJobEntity } from './mysql/locking-job.entity.js';

/**
 * The entities of the lock tables, for `TypeOrmModule.forRoot({ entities: [...LOCK_ENTITIES] })`. `LockModule`
 * also registers them with `TypeOrmModule.forFeature`, so `autoLoadEntities: true` finds them.
 * @publicApi
 */
export const LOCK_ENTITIES = [
  LockingEntity,
  LockingPermissionEntity,
  LockingLogEntity,
  LockingJobRunEntity,
  LockingJobEntity,
] as const;

/**
 * The entities of the lock tables on MySQL and MariaDB (`LockingPermissionEntity` is the same on every database).
 * `LockModule.forRoot({ ..., dialect: 'mysql' })` registers them instead of `LOCK_ENTITIES`.
 * @publicApi
 */
export const LOCK_MYSQL_ENTITIES = [
  MysqlLockingEntity,
  LockingPermissionEntity,
  MysqlLockingLogEntity,
  MysqlLockingJobRunEntity,
  MysqlLockingJobEntity,
] as const;

export { lockEntities, type LockEntityClass } from './lock-entities.factory.js';
