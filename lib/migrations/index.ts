import { CreateLockTables1763683200000 } from './1763683200000-create-lock-tables.js';

export { CreateLockTables1763683200000 } from './1763683200000-create-lock-tables.js';

/**
 * The migrations of nestjs-db-locks, in order: add them to your DataSource's `migrations`.
 * @publicApi
 */
export const LOCK_MIGRATIONS = [CreateLockTables1763683200000] as const;
