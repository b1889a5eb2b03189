import { InvalidLockSpecError } from '../errors/index.js';
import type {
  LockJobRuns,
  LockRequest,
  LockSpec,
  LockSpecsFactory,
  LockTransactionIsolation,
  LockTransactionRunnerToken,
  LockUnavailableAction,
  WithLocksOptions,
} from '../interfaces/index.js';
import { MAX_WAIT_MS, WAIT_MS_EXPECTED } from '../lock.constants.js';
import { parseLockGroup } from './parse-lock-spec.util.js';

/** A fenced transaction's settings, validated. @internal */
export interface ResolvedLockTransaction {
  readonly isolation?: LockTransactionIsolation;
  readonly dataSource?: string;
  /** A runner of the application's data layer (checked at start-up and at the call: `LockTransactionRunners`). */
  readonly runner?: LockTransactionRunnerToken;
}

/** One call's `WithLocksOptions`, validated and parsed: the group in canonical order. @internal */
export interface ResolvedWithLocks {
  readonly requests: readonly LockRequest[];
  readonly onUnavailable?: LockUnavailableAction;
  readonly retryAfterSeconds?: number;
  readonly waitMs?: number;
  /** Set when the call runs in a fenced transaction. */
  readonly transaction?: ResolvedLockTransaction;
  /** How a scheduled job runs on the fleet. */
  readonly scheduledRuns?: LockJobRuns;
}

/** What a `@WithLocks` declaration says once validated: a fixed group, or one derived from each call's arguments. @internal */
export interface WithLocksDeclaration extends Omit<ResolvedWithLocks, 'requests'> {
  /** The fixed group; undefined when the group is derived from the arguments. */
  readonly requests?: readonly LockRequest[];
  /** The call's settings for these arguments (`InvalidLockSpecError` for a bad derived group). */
  forCall(args: readonly unknown[]): ResolvedWithLocks;
}

const ISOLATIONS: ReadonlySet<unknown> = new Set<LockTransactionIsolation>([
  'READ UNCOMMITTED',
  'READ COMMITTED',
  'REPEATABLE READ',
  'SERIALIZABLE',
]);

/** True for `{ locks: ... }`, false for a lock spec or a function. @internal */
export function isWithLocksOptions(value: unknown): value is WithLocksOptions<unknown[]> {
  return typeof value === 'object' && value !== null && 'locks' in value;
}

/**
 * Parses `@WithLocks(...specs)`, `@WithLocks(fn)` or `@WithLocks({ locks, ... })`; throws `InvalidLockSpecError`
 * for anything that can be checked before a call (everything but a derived group's result). @internal
 */
export function resolveWithLocks(args: readonly unknown[]): WithLocksDeclaration {
  if (args.length === 1 && typeof args[0] === 'function') {
    return declare({ locks: args[0] as LockSpecsFactory<unknown[]> });
  }
  if (args.length === 1 && isWithLocksOptions(args[0])) return declare(args[0]);
  if (args.some((arg) => isWithLocksOptions(arg) || typeof arg === 'function')) {
    throw new InvalidLockSpecError(args, 'pass either lock specs, one function or one options object');
  }
  return declare({ locks: args as readonly LockSpec[] });
}

function declare(options: WithLocksOptions<unknown[]>): WithLocksDeclaration {
  const { locks, onUnavailable, retryAfterSeconds, waitMs, scheduledRuns } = options;
  if (onUnavailable !== undefined && onUnavailable !== 'throw' && onUnavailable !== 'skip') {
    throw new InvalidLockSpecError(options, "onUnavailable must be 'throw' or 'skip'");
  }
  if (retryAfterSeconds !== undefined && !(Number.isInteger(retryAfterSeconds) && retryAfterSeconds >= 0)) {
    throw new InvalidLockSpecError(options, 'retryAfterSeconds must be a non-negative integer');
  }
  if (waitMs !== undefined && !(Number.isInteger(waitMs) && waitMs >= 0 && waitMs <= MAX_WAIT_MS)) {
    throw new InvalidLockSpecError(options, `waitMs must be ${WAIT_MS_EXPECTED}`);
  }
  if (scheduledRuns !== undefined && scheduledRuns !== 'once-per-tick' && scheduledRuns !== 'per-replica') {
    throw new InvalidLockSpecError(options, "scheduledRuns must be 'once-per-tick' or 'per-replica'");
  }
  const settings = { onUnavailable, retryAfterSeconds, waitMs, scheduledRuns, transaction: resolveTransaction(options) };
  if (typeof locks === 'function') {
    return { ...settings, forCall: (args) => ({ ...settings, requests: parseLockGroup(asGroup(locks(...args))) }) };
  }
  const resolved: ResolvedWithLocks = { ...settings, requests: parseLockGroup(locks) };
  return { ...resolved, forCall: () => resolved };
}

/** A derived result may be one spec or an iterable of them. */
function asGroup(result: ReturnType<LockSpecsFactory<unknown[]>>): Iterable<LockSpec> {
  if (typeof result === 'string') return [result as LockSpec];
  if (typeof result === 'object' && result !== null && !(Symbol.iterator in result)) return [result];
  return result as Iterable<LockSpec>;
}

function resolveTransaction(options: WithLocksOptions<unknown[]>): ResolvedLockTransaction | undefined {
  const { transaction } = options;
  if (transaction === undefined || transaction === false) return undefined;
  if (transaction === true) return {};
  if (typeof transaction !== 'object' || transaction === null) {
    throw new InvalidLockSpecError(options, 'transaction must be true, false or { isolation, dataSource } or { isolation, runner }');
  }
  const { isolation, dataSource, runner } = transaction;
  if (isolation !== undefined && !ISOLATIONS.has(isolation)) {
    throw new InvalidLockSpecError(options, `transaction.isolation must be one of ${[...ISOLATIONS].join(', ')}`);
  }
  if (dataSource !== undefined && (typeof dataSource !== 'string' || dataSource.length === 0)) {
    throw new InvalidLockSpecError(options, 'transaction.dataSource must be the name of a registered DataSource');
  }
  return runner === undefined ? { isolation, dataSource } : { isolation, dataSource, runner };
}
