export { LockError } from './lock.error.js';
export { InvalidLockSpecError } from './invalid-lock-spec.error.js';
export { InvalidLockArgumentError } from './invalid-lock-argument.error.js';
export { IllegalMonitorStateError } from './illegal-monitor-state.error.js';
export { LockStoreError } from './lock-store.error.js';
export { LockTablesMissingError } from './lock-tables-missing.error.js';
export { LockConfigurationError } from './lock-configuration.error.js';
