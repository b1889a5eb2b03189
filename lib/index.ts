export { LockModule } from './lock.module.js';
export { LOCK_MODULE_OPTIONS } from './lock.module-definition.js';
export type { LockModuleAsyncOptions, LockModuleRootOptions } from './lock.module-definition.js';
export { LockService } from './services/lock.service.js';
export { LeaderService } from './leader/leader.service.js';
export { Leader } from './decorators/leader.decorator.js';
export type { LockGrantHandle } from './services/lock-grant.handle.js';
export { LockAdminService } from './admin/lock-admin.service.js';
export { LockFence } from './fence/lock-fence.service.js';
export type { LockFenceConnection, LockFenceStatement, LockFenceStep } from './fence/lock-fence.interface.js';
export { LockTestingModule, type LockTestingModuleOptions } from './testing/lock-testing.module.js';
export { InMemoryLockDatabase } from './store/memory/memory-lock.database.js';
export { WithLocks, type WithLocksDecorator, type MatchesLockFunction } from './decorators/with-locks.decorator.js';
export {
  LockHttpInterceptor,
  type LockedResponseBody,
  type LockUnavailableResponseBody,
  type LockLostResponseBody,
  type InvalidLockResponseBody,
} from './interceptors/lock-http.interceptor.js';
export type {
  LockMode,
  LockSpec,
  LockRequest,
  LockPermits,
  LockModuleOptions,
  LockModuleExtras,
  LockRetryOptions,
  LockStats,
  WithLocksOptions,
  LockUnavailableAction,
  LockSpecsFactory,
  LockTransactionIsolation,
  WithLocksTransactionOptions,
  LockGrant,
  LockLogEntry,
  LockLogStatus,
  TryLocksOptions,
  LockAdminOptions,
  ForcedRelease,
  LockWaiterInfo,
  LockGrantFilter,
  LockLogQuery,
  LockPermitsEntry,
  LockSchemaStatus,
  LockHealth,
  LockTelemetryOptions,
  LockTablesOptions,
  LockJobOutcome,
  LockJobRuns,
  LockJobRun,
  LockJobInfo,
  LockJobRunQuery,
  ScheduledTickOptions,
  ScheduledTickCron,
  ScheduledTickInterval,
  LeaderOptions,
  LeaderTerm,
  LeadershipChange,
  LeadershipChangeReason,
  LeaderWork,
  LockLeaderInfo,
  LockRoleLeader,
  LockRoleCandidate,
  LockLeaderFilter,
} from './interfaces/index.js';
export {
  LOCK_ENTITIES,
  LOCK_MYSQL_ENTITIES,
  LockingEntity,
  LockingPermissionEntity,
  LockingLogEntity,
  MysqlLockingEntity,
  MysqlLockingLogEntity,
  LockingJobRunEntity,
  LockingJobEntity,
  MysqlLockingJobRunEntity,
  MysqlLockingJobEntity,
  lockEntities,
  type LockEntityClass,
} from './entities/index.js';
export {
  LOCK_MIGRATIONS,
  CreateLockTables1763683200000,
  FasterLockFunctions1795247677000,
  OrderedLockRelease1795400000000,
  OrderedLockWaiters1795500000000,
  ForcedLockRelease1795600000000,
  GroupLockChecks1795700000000,
  MysqlLockProcedures1795800000000,
  JobRunHistory1796000000000,
  LockInstances1796200000000,
  FasterMysqlLockProcedures1796400000000,
  MysqlLockDoorbells1796500000000,
  JobRunClaims1796600000000,
  FairLockWaiters1796700000000,
  LeaderTerms1796900000000,
  lockMigrations,
  type LockMigrationClass,
} from './migrations/index.js';
export { parseLockSpec, parseLockGroup } from './utils/parse-lock-spec.util.js';
export {
  LockError,
  InvalidLockSpecError,
  InvalidLockArgumentError,
  IllegalMonitorStateError,
  LockStoreError,
  LockTablesMissingError,
  LockConfigurationError,
  LockNotAcquiredError,
  LockUpgradeError,
  LockModuleNotInitializedError,
  LockLostError,
  AppIdInUseError,
  LockWaitAbortedError,
  LockShutdownError,
  GrantNotFoundError,
  NoFencedTransactionError,
  LockServerReadOnlyError,
  LockStartupTimeoutError,
  LeadershipEndedError,
} from './errors/index.js';
