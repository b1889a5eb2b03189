import type { LockRetryOptions } from '../interfaces/lock-module-options.interface.js';
import type { LockTables } from './lock-tables.util.js';

/**
 * What a statement runner (either dialect) needs of the module's options.
 * @internal
 */
export interface StatementRunnerOptions {
  readonly retry: Required<LockRetryOptions>;
  readonly queryTimeoutMs: number;
  /** Where the lock tables are: every statement is written for it (the default when absent). */
  readonly tables?: LockTables;
}
