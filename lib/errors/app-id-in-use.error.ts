import { LockConfigurationError } from './lock-configuration.error.js';

/**
 * Another live instance holds this `appId` (its database session holds the instance lock). Starting would let
 * start-up recovery free that instance's locks, so the module refuses to start.
 * @publicApi
 */
export class AppIdInUseError extends LockConfigurationError {
  constructor(
    /** The contested app id. */
    readonly appId: string,
    /** What the database says about the live holder (application name, address, backend pid), when visible. */
    readonly holder: string,
  ) {
    super(
      `appId "${appId}" is in use by a live instance (${holder}). Give every running instance its own appId; ` +
        'a crashed instance frees it as soon as its database session ends.',
    );
  }
}
