import type { LockMode } from '../interfaces/index.js';
import { MAX_PERMITS, MAX_STAMP } from '../lock.constants.js';
import { describeValue } from '../errors/error-value.util.js';
import { lockNameProblem } from '../utils/lock-name.util.js';
import { usageError } from './lock-cli.errors.js';

/**
 * Parsers of the command line's arguments and option values. Each throws a usage error (exit code 2) before any
 * connection is made.
 */

/** A whole number from `min` to `max`, written in decimal digits only. @internal */
export function parseWhole(what: string, text: string, min: number, max: number): number {
  const value = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw usageError(`invalid ${what} '${text}': expected a whole number from ${min} to ${max}`);
  }
  return value;
}

/** A stamp, as `tryLocks` returned it. @internal */
export function parseStamp(text: string): number {
  return parseWhole('stamp', text, 1, MAX_STAMP);
}

/** A permits count. @internal */
export function parsePermits(text: string): number {
  return parseWhole('permits', text, 1, MAX_PERMITS);
}

/** A lock name (any string of 1–200 bytes of UTF-8, see `lockNameProblem`). @internal */
export function parseLockName(text: string): string {
  const problem = lockNameProblem(text);
  if (problem !== undefined) throw usageError(`invalid lock name ${describeValue(text)}: ${problem}`);
  return text;
}

/** `read` or `write`. @internal */
export function parseMode(text: string): LockMode {
  if (text !== 'read' && text !== 'write') throw usageError(`invalid mode '${text}': expected read or write`);
  return text;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A point in time: a duration back from now (`90s`, `15m`, `2h`, `7d`) or an ISO 8601 date (`2026-11-23`,
 * `2026-11-23T18:00:00Z`).
 * @param now the present, for durations
 * @internal
 */
export function parseSince(text: string, now: Date = new Date()): Date {
  const duration = /^(\d{1,9})([smhd])$/.exec(text);
  if (duration) return new Date(now.getTime() - Number(duration[1]) * (UNIT_MS[duration[2] ?? 's'] ?? 1000));
  const date = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text) ? new Date(text) : undefined;
  if (!date || Number.isNaN(date.getTime())) {
    throw usageError(`invalid time '${text}': expected a duration such as 30m, 2h, 7d or an ISO date`);
  }
  return date;
}

/** A reason for a forced release: some text, at most 500 characters. @internal */
export function parseReason(text: string): string {
  const reason = text.trim();
  if (reason.length === 0 || reason.length > 500) throw usageError('--reason must be 1-500 characters of text');
  return reason;
}
