import { CreateLockTables1763683200000 } from './1763683200000-create-lock-tables.js';
import { FasterLockFunctions1795247677000 } from './1795247677000-faster-lock-functions.js';
import { OrderedLockRelease1795400000000 } from './1795400000000-ordered-lock-release.js';
import { OrderedLockWaiters1795500000000 } from './1795500000000-ordered-lock-waiters.js';
import { ForcedLockRelease1795600000000 } from './1795600000000-forced-lock-release.js';
import { GroupLockChecks1795700000000 } from './1795700000000-group-lock-checks.js';
import { MysqlLockProcedures1795800000000 } from './1795800000000-mysql-lock-procedures.js';
import { JobRunHistory1796000000000 } from './1796000000000-job-run-history.js';
import { LockInstances1796200000000 } from './1796200000000-lock-instances.js';
import { FasterMysqlLockProcedures1796400000000 } from './1796400000000-faster-mysql-lock-procedures.js';
import { MysqlLockDoorbells1796500000000 } from './1796500000000-mysql-lock-doorbells.js';
import { JobRunClaims1796600000000 } from './1796600000000-job-run-claims.js';
import { FairLockWaiters1796700000000 } from './1796700000000-fair-lock-waiters.js';
import { JobControls1796800000000 } from './1796800000000-job-controls.js';
import { LeaderTerms1796900000000 } from './1796900000000-leader-terms.js';
import { MysqlQuietRelease1797000000000 } from './1797000000000-mysql-quiet-release.js';
import { GroupCheckProbes1797100000000 } from './1797100000000-group-check-probes.js';
import { MysqlCertifiedWrites1797200000000 } from './1797200000000-mysql-certified-writes.js';
import { LockHandOver1797300000000 } from './1797300000000-lock-hand-over.js';

export { CreateLockTables1763683200000 } from './1763683200000-create-lock-tables.js';
export { FasterLockFunctions1795247677000 } from './1795247677000-faster-lock-functions.js';
export { OrderedLockRelease1795400000000 } from './1795400000000-ordered-lock-release.js';
export { OrderedLockWaiters1795500000000 } from './1795500000000-ordered-lock-waiters.js';
export { ForcedLockRelease1795600000000 } from './1795600000000-forced-lock-release.js';
export { GroupLockChecks1795700000000 } from './1795700000000-group-lock-checks.js';
export { MysqlLockProcedures1795800000000 } from './1795800000000-mysql-lock-procedures.js';
export { JobRunHistory1796000000000 } from './1796000000000-job-run-history.js';
export { LockInstances1796200000000 } from './1796200000000-lock-instances.js';
export { FasterMysqlLockProcedures1796400000000 } from './1796400000000-faster-mysql-lock-procedures.js';
export { MysqlLockDoorbells1796500000000 } from './1796500000000-mysql-lock-doorbells.js';
export { JobRunClaims1796600000000 } from './1796600000000-job-run-claims.js';
export { FairLockWaiters1796700000000 } from './1796700000000-fair-lock-waiters.js';
export { JobControls1796800000000 } from './1796800000000-job-controls.js';
export { LeaderTerms1796900000000 } from './1796900000000-leader-terms.js';
export { MysqlQuietRelease1797000000000 } from './1797000000000-mysql-quiet-release.js';
export { GroupCheckProbes1797100000000 } from './1797100000000-group-check-probes.js';
export { MysqlCertifiedWrites1797200000000 } from './1797200000000-mysql-certified-writes.js';
export { LockHandOver1797300000000 } from './1797300000000-lock-hand-over.js';

/**
 * The migrations of nestjs-db-locks, in order: add them all to your DataSource's `migrations` (new ones come with
 * new versions of the library; `runMigrations` applies those not yet run).
 * @publicApi
 */
export const LOCK_MIGRATIONS = [
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
  JobControls1796800000000,
  LeaderTerms1796900000000,
  MysqlQuietRelease1797000000000,
  GroupCheckProbes1797100000000,
  MysqlCertifiedWrites1797200000000,
  LockHandOver1797300000000,
] as const;

export { lockMigrations, type LockMigrationClass } from './lock-migrations.factory.js';
