import { InvalidLockSpecError } from '../errors/index.js';
import type { LockMode, LockRequest, LockSpec } from '../interfaces/index.js';
import { MAX_GROUP_SIZE } from '../lock.constants.js';
import { compareLockNames } from './lock-name.util.js';
import { assertLockName } from './lock-validation.util.js';

const SUFFIXES: ReadonlyArray<readonly [string, LockMode]> = [
  ['_READ', 'read'],
  ['_WRITE', 'write'],
];

/**
 * Parses one spec (`'WS1_READ'`, `'WS1_WRITE'` or `{ name, mode }`) into a `LockRequest`.
 * @throws InvalidLockSpecError
 * @publicApi
 */
export function parseLockSpec(spec: LockSpec): LockRequest {
  if (typeof spec === 'string') {
    for (const [suffix, mode] of SUFFIXES) {
      if (spec.endsWith(suffix)) {
        const name = spec.slice(0, -suffix.length);
        assertLockName(name, spec);
        return { name, mode };
      }
    }
    throw new InvalidLockSpecError(spec, "a string spec is the lock name followed by '_READ' or '_WRITE'");
  }
  if (spec === null || typeof spec !== 'object') {
    throw new InvalidLockSpecError(spec, "a spec is 'NAME_READ', 'NAME_WRITE' or { name, mode }");
  }
  const { name, mode } = spec as { name?: unknown; mode?: unknown };
  assertLockName(name, spec);
  if (mode !== 'read' && mode !== 'write') {
    throw new InvalidLockSpecError(spec, "mode must be 'read' or 'write'");
  }
  return { name, mode };
}

/**
 * Parses a group: validates every spec, collapses duplicates, refuses one name in both modes (no implicit upgrade),
 * and returns the requests in canonical order (by name), the order in which they are always taken.
 * @throws InvalidLockSpecError
 * @publicApi
 */
export function parseLockGroup(locks: Iterable<LockSpec>): LockRequest[] {
  if (typeof locks === 'string' || locks === null || typeof locks !== 'object' || !(Symbol.iterator in locks)) {
    throw new InvalidLockSpecError(locks, 'a group is an array or a Set of lock specs');
  }
  const byName = new Map<string, LockRequest>();
  for (const spec of locks) {
    const request = parseLockSpec(spec);
    const seen = byName.get(request.name);
    if (seen && seen.mode !== request.mode) {
      throw new InvalidLockSpecError(
        [...locks],
        `lock "${request.name}" is requested both for read and for write; ask for write only`,
      );
    }
    byName.set(request.name, request);
    if (byName.size > MAX_GROUP_SIZE) {
      throw new InvalidLockSpecError([...locks], `a group holds at most ${MAX_GROUP_SIZE} locks`);
    }
  }
  if (byName.size === 0) {
    throw new InvalidLockSpecError([], 'a group needs at least one lock');
  }
  // Canonical order (by code point, the databases' byte order): every caller takes names in the same order, so groups
  // can never wait on each other in a cycle.
  return [...byName.values()].sort((a, b) => compareLockNames(a.name, b.name));
}
