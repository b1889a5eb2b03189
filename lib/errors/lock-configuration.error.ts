import { LockError } from './lock.error.js';

/**
 * `LockModule` is configured in a way that cannot work (a missing `appId`, a non-PostgreSQL DataSource, a session
 * that is not READ COMMITTED, a missing `ScheduleModule.forRoot()`, …). The message says how to fix it.
 * @publicApi
 */
export class LockConfigurationError extends LockError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
