import { CronTime } from 'cron';
import { SCHEDULER_TYPE_METADATA } from '../lock.constants.js';

/** `@nestjs/schedule`'s metadata keys of the schedule options and its `SchedulerType` values. */
const CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
const TIMEOUT_OPTIONS = 'SCHEDULE_TIMEOUT_OPTIONS';
const CRON = 1;
const TIMEOUT = 2;
const INTERVAL = 3;

/** The schedule of a `@Cron` / `@Interval` / `@Timeout` method, read from its metadata. @internal */
export type JobSchedule =
  | {
      readonly kind: 'cron';
      /** `cron <expression>` (with its time zone), for the history. */
      readonly description: string;
      /** The expression's fire times. */
      readonly time: CronTime;
    }
  | { readonly kind: 'interval' | 'timeout'; readonly description: string; readonly ms: number };

/** The schedule of a scheduled method (`undefined` for any other method). @internal */
export function scheduleOf(method: object): JobSchedule | undefined {
  const type: unknown = Reflect.getMetadata(SCHEDULER_TYPE_METADATA, method);
  if (type === CRON) {
    const options = Reflect.getMetadata(CRON_OPTIONS, method) as
      | { cronTime: string | Date | { toMillis(): number }; timeZone?: string; utcOffset?: number; disabled?: boolean }
      | undefined;
    // A disabled job never ticks: nothing to claim or to register.
    if (!options || options.disabled === true) return undefined;
    return cronSchedule(options.cronTime, options.timeZone, options.utcOffset);
  }
  if (type === INTERVAL || type === TIMEOUT) {
    const key = type === INTERVAL ? INTERVAL_OPTIONS : TIMEOUT_OPTIONS;
    const ms = (Reflect.getMetadata(key, method) as { timeout?: number } | undefined)?.timeout ?? 0;
    return type === INTERVAL ? intervalSchedule(ms) : { kind: 'timeout', description: `timeout ${ms} ms`, ms };
  }
  return undefined;
}

/** A cron schedule, read as `CronJob` reads it (throws `cron`'s error for an expression or zone it refuses). @internal */
export function cronSchedule(cronTime: string | Date | { toMillis(): number }, timeZone?: string, utcOffset?: number): JobSchedule {
  // `CronTime` takes either a time zone or an offset, as `CronJob` does.
  const time =
    utcOffset !== undefined ? new CronTime(cronTime as string, null, utcOffset as never) : new CronTime(cronTime as string, timeZone);
  const source = typeof cronTime === 'string' ? cronTime : new Date(time.sendAt().toMillis()).toISOString();
  const zone = timeZone ? ` (${timeZone})` : utcOffset !== undefined ? ` (UTC${utcOffset >= 0 ? '+' : ''}${utcOffset})` : '';
  return { kind: 'cron', description: `cron ${source}${zone}`, time };
}

/** An interval schedule of `ms` milliseconds. @internal */
export function intervalSchedule(ms: number): JobSchedule {
  return { kind: 'interval', description: `every ${ms} ms`, ms };
}

/** A cron tick: the fire time it belongs to, the gap to the following fire time, and that one. @internal */
export interface CronTick {
  readonly tick: number;
  /** The gap to the next fire time, in ms: the period the skew bound is a third of. */
  readonly period: number;
  readonly next: number;
}

/** How early (ms) a timer may fire and still be taken for the fire time ahead: min(this, a tenth of the period). */
const EARLY_TOLERANCE_MS = 50;

/** Doublings of the window looked back through for a fire time (2^40 s is far beyond the 8 years `cron` looks ahead). */
const MAX_DOUBLINGS = 40;

/**
 * The tick a replica's timer fired for at `firedAt` (epoch ms, the replica's own clock when the schedule invoked the
 * job): the latest fire time of `time` at or before `firedAt`, or the next one when `firedAt` is at most
 * min(50 ms, a tenth of its period) before it (a timer that fires a little early). The schedule module fires a job
 * when the replica's own clock reads the fire time (later under load, never much earlier), so this names the same
 * tick on every replica, however far their clocks are apart and however late the timer: a late timer names its own
 * tick, never the next. Found in a bounded number of `getNextDateFrom` calls (about twice the log2 of the gap, in
 * seconds, before the tick), whatever the expression.
 * @internal
 */
export function cronTickOf(time: CronTime, firedAt: number): CronTick {
  if (time.realDate) {
    const at = time.sendAt().toMillis();
    return { tick: at, period: Number.POSITIVE_INFINITY, next: Number.POSITIVE_INFINITY };
  }
  const zone = zoneOf(time);
  // The first fire time strictly after `ms` (fire times are whole seconds), non-decreasing in `ms`.
  const after = (ms: number): number => time.getNextDateFrom(new Date(ms), zone).toMillis();
  const ahead = after(firedAt);
  const following = after(ahead);
  if (ahead - firedAt <= Math.min(EARLY_TOLERANCE_MS, (following - ahead) / 10)) {
    return { tick: ahead, period: following - ahead, next: following };
  }
  const tick = latestAtOrBefore(after, firedAt);
  return { tick, period: ahead - tick, next: ahead };
}

/**
 * The latest fire time at or before `t`: a window behind `t` is doubled until a fire time lies in it, then the start
 * of the window is narrowed (binary search on whole seconds: `after` is non-decreasing) to the last start whose next
 * fire time is still at or before `t`.
 */
function latestAtOrBefore(after: (ms: number) => number, t: number): number {
  const end = Math.floor(t / 1000) * 1000;
  // `after(end - 1)` is the fire time at `end` itself when there is one.
  let low = end - 1;
  let width = 1000;
  for (let doubling = 0; after(low) > t; doubling++) {
    if (doubling === MAX_DOUBLINGS) throw new RangeError(`No fire time before ${new Date(t).toISOString()}`);
    low = end - 1 - width;
    width *= 2;
  }
  // after(low) <= t; after(high) > t.
  let high = t;
  while (high - low > 1000) {
    // Whole seconds from `low`, strictly between `low` and `high` (at least a second: `high - low` exceeds one).
    const middle = low + Math.max(1, Math.floor((high - low) / 2000)) * 1000;
    if (after(middle) <= t) low = middle;
    else high = middle;
  }
  return after(low);
}

/** The zone `CronJob` reads the expression in: its `timeZone`, its `utcOffset` (minutes), or the system's. */
function zoneOf(time: CronTime): string | undefined {
  const offset = time.utcOffset;
  if (offset === undefined || offset === null) return time.timeZone;
  const hours = Math.trunc(offset / 60);
  const minutes = Math.abs(offset - hours * 60);
  return `UTC${offset < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`;
}
