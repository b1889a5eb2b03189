export type { LockMode, LockSpec, LockRequest, LockPermits } from './lock-spec.interface.js';
export type { LockModuleOptions, LockModuleExtras, LockRetryOptions } from './lock-module-options.interface.js';
export type { LockStats } from './lock-stats.interface.js';
export type {
  WithLocksOptions,
  LockUnavailableAction,
  LockSpecsFactory,
  LockTransactionIsolation,
  WithLocksTransactionOptions,
} from './with-locks-options.interface.js';
export type { LockGrant, LockLogEntry, LockLogStatus } from './lock-grant.interface.js';
export type { TryLocksOptions } from './try-locks-options.interface.js';
export type {
  LockAdminOptions,
  ForcedRelease,
  LockWaiterInfo,
  LockGrantFilter,
  LockLogQuery,
  LockPermitsEntry,
  LockSchemaStatus,
} from './lock-admin.interface.js';
export type { LockHealth, LockGaleraNode } from './lock-health.interface.js';
export type { LockTablesOptions } from './lock-tables-options.interface.js';
export type { LockTelemetryOptions } from './lock-telemetry-options.interface.js';
export type {
  LockJobOutcome,
  LockJobRuns,
  LockJobRun,
  LockJobInfo,
  LockJobRunQuery,
  LockJobPause,
  LockJobActionKind,
  LockJobControl,
  LockJobAction,
} from './lock-job.interface.js';
export type { ScheduledTickOptions, ScheduledTickCron, ScheduledTickInterval } from './scheduled-tick-options.interface.js';
export type {
  LockTransactionRunner,
  LockTransactionRunnerToken,
  LockTransactionRunOptions,
} from './lock-transaction-runner.interface.js';
export type { LockLeaderInfo, LockRoleLeader, LockRoleCandidate, LockLeaderFilter } from './lock-leaders.interface.js';
export type { LeaderOptions, LeaderTerm, LeadershipChange, LeadershipChangeReason, LeaderWork } from './leader.interface.js';
