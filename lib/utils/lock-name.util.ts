import { MAX_LOCK_NAME_BYTES } from '../lock.constants.js';

/** C0 and C1 control characters (`\n`, `\r`, `\t`, NUL, …). */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/u;

/** A surrogate that is not half of a pair (in a `u` regex, a pair is one code point and does not match). */
const LONE_SURROGATE = /[\ud800-\udfff]/u;

/**
 * Why `name` is not a lock name, or undefined when it is one. A lock name is any string that:
 * - is 1 to `MAX_LOCK_NAME_BYTES` (200) bytes long in UTF-8;
 * - is well-formed Unicode (no lone surrogate: it would be stored as U+FFFD, one byte sequence for several names);
 * - has no control character (PostgreSQL cannot store NUL; a newline would split the wake-up notifications and forge
 *   log lines);
 * - does not end with a space (MySQL/MariaDB `utf8mb4_bin` is a PAD SPACE collation: `a` and `a ` would be one name).
 *
 * Names are never normalised: `é` (U+00E9) and `é` (e + U+0301) are two names, as are `Orders` and `ORDERS`.
 * @internal
 */
export function lockNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'a lock name is a non-empty string';
  if (LONE_SURROGATE.test(name)) return 'a lock name must be well-formed Unicode (it has a lone surrogate)';
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > MAX_LOCK_NAME_BYTES) {
    return `a lock name is at most ${MAX_LOCK_NAME_BYTES} bytes of UTF-8 (this one has ${bytes} bytes)`;
  }
  if (CONTROL_CHARACTER.test(name)) return 'a lock name has no control characters (newline, tab, NUL, …)';
  if (name.endsWith(' ')) return 'a lock name does not end with a space';
  return undefined;
}

/**
 * Orders lock names by Unicode code point, which is the byte order of their UTF-8 (the order of PostgreSQL's `C`
 * collation and of MySQL's `utf8mb4_bin`), not JavaScript's UTF-16 order (which puts U+E000–U+FFFF after the astral
 * characters): every grant, whichever path takes it, locks shared names in one order.
 * @internal
 */
export function compareLockNames(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 code unit's rank in code point order: surrogates (astral characters) after U+E000–U+FFFF. */
function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}
