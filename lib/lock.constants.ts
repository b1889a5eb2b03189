import type { LockPermits } from './interfaces/index.js';

/** Characters an app id may use; 1–200 of them. @internal */
export const APP_ID_PATTERN = /^[A-Za-z0-9_.:\-/]{1,200}$/;

/**
 * Longest lock name, in bytes of UTF-8: the name columns are `varchar(200)` on both dialects, counted in characters
 * (PostgreSQL, MySQL/MariaDB `utf8mb4`), and 200 bytes are never more than 200 characters. @internal
 */
export const MAX_LOCK_NAME_BYTES = 200;

/** Largest `waitMs`: 2^31 − 1 ms (about 24.8 days), the longest delay a Node.js timer takes. @internal */
export const MAX_WAIT_MS = 2_147_483_647;

/** What a `waitMs` must be, as the errors say it. @internal */
export const WAIT_MS_EXPECTED = `an integer number of milliseconds from 0 to ${MAX_WAIT_MS} (2^31 − 1, about 24.8 days)`;

/** Most locks one group may hold. @internal */
export const MAX_GROUP_SIZE = 100;

/** Largest stamp (and permits) the database hands out: stamps stay safe integers. @internal */
export const MAX_STAMP = Number.MAX_SAFE_INTEGER;

/** Largest permits value (PostgreSQL `integer`). @internal */
export const MAX_PERMITS = 2_147_483_647;

/** Permits used when `locking_permissions` has no row: seed 000's defaults. @internal */
export const DEFAULT_PERMITS: LockPermits = { read: 1, write: 1 };

/** @internal */
export const DEFAULT_PERMITS_REFRESH_INTERVAL_MS = 30_000;

/**
 * The shortest time a waiter's rows count after its last attempt, whatever `waitRecheckMs` says: a grant a release
 * hands over ends with them unless renewed, and its holder renews it once half of this has passed, so a busy database
 * or event loop has at least half a second for that renewal. @internal
 */
export const MIN_WAITER_TTL_MS = 1000;

/** Prefix of the library's interval names in `SchedulerRegistry`. @internal */
export const TASK_PREFIX = 'nestjs-db-locks';

/** Injection token of the validated options with defaults applied. @internal */
export const RESOLVED_LOCK_OPTIONS = 'nestjs-db-locks:resolved-options';

/** Injection token of where the lock tables are (`LockTables`, from the extras `schema` / `tablePrefix`). @internal */
export const LOCK_TABLES = 'nestjs-db-locks:tables';

/** Injection token of the DataSource `LockModule` uses (the default of fenced transactions). @internal */
export const LOCK_DATA_SOURCE = 'nestjs-db-locks:data-source';

/** Metadata key of the lock declaration of a `@WithLocks` method (on the method's function). @internal */
export const LOCKS_METADATA = 'nestjs-db-locks:locks';

/** `@nestjs/schedule`'s metadata key marking `@Cron` / `@Interval` / `@Timeout` methods. @internal */
export const SCHEDULER_TYPE_METADATA = 'SCHEDULER_TYPE';
