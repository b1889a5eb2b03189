import type { LockRetryOptions } from '../interfaces/lock-module-options.interface.js';

/**
 * What a statement runner (either dialect) needs of the module's options.
 * @internal
 */
export interface StatementRunnerOptions {
  readonly retry: Required<LockRetryOptions>;
  readonly queryTimeoutMs: number;
}
