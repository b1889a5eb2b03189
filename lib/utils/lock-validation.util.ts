import { InvalidLockArgumentError, InvalidLockSpecError } from '../errors/index.js';
import type { EntityManager } from 'typeorm';
import type { LockGrantFilter, LockMode, TryLocksOptions } from '../interfaces/index.js';
import { APP_ID_PATTERN, MAX_PERMITS, MAX_STAMP, MAX_WAIT_MS, WAIT_MS_EXPECTED } from '../lock.constants.js';
import { lockNameProblem } from './lock-name.util.js';

/** Throws `InvalidLockSpecError` unless `name` is a valid lock name (see `lockNameProblem`). @internal */
export function assertLockName(name: unknown, spec: unknown = name): asserts name is string {
  const problem = lockNameProblem(name);
  if (problem !== undefined) throw new InvalidLockSpecError(spec, problem);
}

/** Throws `InvalidLockArgumentError` unless `mode` is `read` or `write`. @internal */
export function assertLockMode(mode: unknown): asserts mode is LockMode {
  if (mode !== 'read' && mode !== 'write') {
    throw new InvalidLockArgumentError('mode', mode, "'read' or 'write'");
  }
}

/** Throws `InvalidLockArgumentError` unless `stamp` could have been returned by `tryLocks`. @internal */
export function assertStamp(stamp: unknown): asserts stamp is number {
  if (typeof stamp !== 'number' || !Number.isInteger(stamp) || stamp < 1 || stamp > MAX_STAMP) {
    throw new InvalidLockArgumentError('stamp', stamp, 'a positive safe integer returned by tryLocks()');
  }
}

/** Throws `InvalidLockArgumentError` unless `permits` is an integer in [1, 2^31 - 1]. @internal */
export function assertPermits(permits: unknown, argument = 'permits'): asserts permits is number {
  if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1 || permits > MAX_PERMITS) {
    throw new InvalidLockArgumentError(argument, permits, `an integer from 1 to ${MAX_PERMITS}`);
  }
}

/** Throws `InvalidLockArgumentError` unless `limit` is an integer from 1 to 10000 (rows of a report). @internal */
export function assertLimit(limit: unknown): asserts limit is number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new InvalidLockArgumentError('limit', limit, 'an integer from 1 to 10000');
  }
}

/**
 * Throws `InvalidLockArgumentError` unless `manager` runs an open transaction: outside one, "business done" would
 * commit on its own and fence nothing. @internal
 */
export function assertInTransaction(manager: unknown): asserts manager is EntityManager {
  const runner = (manager as { queryRunner?: { isTransactionActive?: unknown; isReleased?: unknown } } | null)
    ?.queryRunner;
  if (!(manager instanceof Object) || runner?.isTransactionActive !== true || runner.isReleased === true) {
    throw new InvalidLockArgumentError(
      'manager',
      manager && 'EntityManager without an open transaction',
      'the EntityManager of the business transaction (e.g. from dataSource.transaction(manager => ...))',
    );
  }
}

/** Throws `InvalidLockArgumentError` unless `options` are valid `tryLocks` options. @internal */
export function assertTryLocksOptions(options: unknown): TryLocksOptions {
  if (options === null || typeof options !== 'object') {
    throw new InvalidLockArgumentError('options', options, 'an object { waitMs?, signal? }');
  }
  const { waitMs, signal } = options as TryLocksOptions;
  if (waitMs !== undefined && (typeof waitMs !== 'number' || !Number.isInteger(waitMs) || waitMs < 0 || waitMs > MAX_WAIT_MS)) {
    throw new InvalidLockArgumentError('waitMs', waitMs, WAIT_MS_EXPECTED);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidLockArgumentError('signal', signal, 'an AbortSignal');
  }
  return { waitMs, signal };
}

/** Throws unless `filter` is a valid `getGrants` filter (`name` a lock name, `appId` an app id). @internal */
export function assertGrantFilter(filter: unknown): LockGrantFilter {
  if (filter === null || typeof filter !== 'object') {
    throw new InvalidLockArgumentError('filter', filter, 'an object { name?, appId? }');
  }
  const { name, appId } = filter as LockGrantFilter;
  if (name !== undefined) assertLockName(name);
  if (appId !== undefined && (typeof appId !== 'string' || !APP_ID_PATTERN.test(appId))) {
    throw new InvalidLockArgumentError('appId', appId, '1-200 characters of letters, digits and _ . : - /');
  }
  return { name, appId };
}
