import { LockError } from './lock.error.js';

/**
 * A `@WithLocks` method was called while no initialised `LockModule` was available: the module is not imported, or
 * the application has not finished `await app.init()` / `app.listen()` (or has been closed).
 * @publicApi
 */
export class LockModuleNotInitializedError extends LockError {
  constructor(target: string) {
    super(
      `${target} is decorated with @WithLocks but LockModule is not initialised: import LockModule.forRoot() and ` +
        'call decorated methods only after `await app.init()` (or `app.listen()`)',
    );
  }
}
