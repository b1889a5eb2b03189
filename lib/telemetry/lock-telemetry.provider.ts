import type { Provider } from '@nestjs/common';
import { RESOLVED_LOCK_OPTIONS } from '../lock.constants.js';
import type { ResolvedLockOptions } from '../utils/resolve-lock-options.util.js';
import { LockTelemetry } from './lock-telemetry.service.js';
import { loadOtelApi } from './otel-api.loader.js';
import { OtelLockTelemetry } from './otel-lock-telemetry.service.js';

/** The recorder when nothing is recorded (shared: it has no state). */
const DISABLED = new LockTelemetry();

/**
 * The module's `LockTelemetry`: through OpenTelemetry when it is enabled and `@opentelemetry/api` is installed
 * (loaded once, here, when the module starts), else one that records nothing.
 * @internal
 */
export async function createLockTelemetry(options: ResolvedLockOptions): Promise<LockTelemetry> {
  if (!options.telemetry.enabled) return DISABLED;
  const api = await loadOtelApi();
  if (!api) return DISABLED;
  return new OtelLockTelemetry(api, options);
}

/** Provides `LockTelemetry` from the resolved options. @internal */
export const lockTelemetryProvider: Provider = {
  provide: LockTelemetry,
  useFactory: createLockTelemetry,
  inject: [RESOLVED_LOCK_OPTIONS],
};
