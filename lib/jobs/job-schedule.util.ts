import { executionAsyncResource } from 'node:async_hooks';
import { CronTime } from 'cron';
import { SCHEDULER_TYPE_METADATA } from '../lock.constants.js';

/** `@nestjs/schedule`'s metadata keys of the schedule options and its `SchedulerType` values. */
const CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
const TIMEOUT_OPTIONS = 'SCHEDULE_TIMEOUT_OPTIONS';
const CRON = 1;
const TIMEOUT = 2;
const INTERVAL = 3;

/** Fire times looked at when rounding to the nearest one (a bound for irregular expressions). */
const MAX_STEPS = 10_000;

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
    const { cronTime, timeZone, utcOffset } = options;
    // `CronTime` takes either a time zone or an offset, as `CronJob` does.
    const time =
      utcOffset !== undefined
        ? new CronTime(cronTime as string, null, utcOffset as never)
        : new CronTime(cronTime as string, timeZone);
    const source = typeof cronTime === 'string' ? cronTime : new Date(time.sendAt().toMillis()).toISOString();
    const zone = timeZone ? ` (${timeZone})` : utcOffset !== undefined ? ` (UTC${utcOffset >= 0 ? '+' : ''}${utcOffset})` : '';
    return { kind: 'cron', description: `cron ${source}${zone}`, time };
  }
  if (type === INTERVAL || type === TIMEOUT) {
    const key = type === INTERVAL ? INTERVAL_OPTIONS : TIMEOUT_OPTIONS;
    const ms = (Reflect.getMetadata(key, method) as { timeout?: number } | undefined)?.timeout ?? 0;
    return type === INTERVAL
      ? { kind: 'interval', description: `every ${ms} ms`, ms }
      : { kind: 'timeout', description: `timeout ${ms} ms`, ms };
  }
  return undefined;
}

/** A cron tick: the fire time it belongs to, the gap to the nearest other fire time, and the next one. @internal */
export interface CronTick {
  readonly tick: number;
  /** The gap to the next fire time, in ms: the period the skew bound is a third of. */
  readonly period: number;
  readonly next: number;
}

/**
 * The fire time of `time` nearest to `now` (epoch ms): the tick a replica's timer fired for. The schedule module
 * fires a job when the replica's own clock reads the fire time (a little later under load), so rounding to the
 * nearest fire time names the same tick on every replica, however far their clocks are apart, as long as the timer
 * is late by less than half the period.
 * @internal
 */
export function cronTickOf(time: CronTime, now: number): CronTick {
  if (time.realDate) {
    const at = time.sendAt().toMillis();
    return { tick: at, period: Number.POSITIVE_INFINITY, next: Number.POSITIVE_INFINITY };
  }
  const zone = zoneOf(time);
  const after = (ms: number): number => time.getNextDateFrom(new Date(ms), zone).toMillis();
  const next = after(now);
  // The latest fire time at or before `now`, looked for no further back than `next` is ahead.
  let previous: number | undefined;
  let candidate = after(now - (next - now) - 1);
  for (let step = 0; candidate <= now && step < MAX_STEPS; step++) {
    previous = candidate;
    candidate = after(candidate);
  }
  const tick = previous !== undefined && now - previous <= next - now ? previous : next;
  const following = tick === next ? after(next) : next;
  return { tick, period: following - tick, next: following };
}

/** The zone `CronJob` reads the expression in: its `timeZone`, its `utcOffset` (minutes), or the system's. */
function zoneOf(time: CronTime): string | undefined {
  const offset = time.utcOffset;
  if (offset === undefined || offset === null) return time.timeZone;
  const hours = Math.trunc(offset / 60);
  const minutes = Math.abs(offset - hours * 60);
  return `UTC${offset < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`;
}

/**
 * Whether the current call comes straight from a timer's callback: a tick of `@nestjs/schedule` (its cron and
 * interval jobs run on `setTimeout` / `setInterval`), not a direct call of the method (a controller's "run now").
 * Read synchronously, before the first `await` of the call.
 * @internal
 */
export function calledByTimer(): boolean {
  const resource = executionAsyncResource() as { constructor?: { name?: unknown } } | undefined;
  return resource?.constructor?.name === 'Timeout';
}
