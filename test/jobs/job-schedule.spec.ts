import { Cron, Interval } from '@nestjs/schedule';
import { CronTime } from 'cron';
import { jest } from '@jest/globals';
import { cronTickOf, scheduleOf } from '../../lib/jobs/job-schedule.util.js';
import { planTick, type ScheduledJob } from '../../lib/jobs/job-tick.plan.js';

const at = (iso: string): number => new Date(iso).getTime();

class Jobs {
  @Cron('0 */5 * * * *', { timeZone: 'Europe/Paris' })
  nightly(): void {}

  @Cron('* * * * * *', { disabled: true })
  off(): void {}

  @Interval(2500)
  poll(): void {}

  @Cron('0 */5 * * * *')
  fiveMinutes(): void {}

  plain(): void {}
}

describe('cronTickOf: the fire time a replica timer fired for', () => {
  const everySecond = new CronTime('* * * * * *');
  const everyFiveMinutes = new CronTime('0 */5 * * * *');

  it.each([
    ['exactly on time', '2026-01-01T00:00:05.000Z', '2026-01-01T00:00:05.000Z'],
    ['a timer 3 ms early', '2026-01-01T00:00:04.997Z', '2026-01-01T00:00:05.000Z'],
    ['a timer 400 ms late (a loaded event loop)', '2026-01-01T00:00:05.400Z', '2026-01-01T00:00:05.000Z'],
    ['a timer 600 ms late: its own tick, not the next (issue 36, item 11)', '2026-01-01T00:00:05.600Z', '2026-01-01T00:00:05.000Z'],
    ['a timer 900 ms late', '2026-01-01T00:00:05.900Z', '2026-01-01T00:00:05.000Z'],
  ])('names the latest fire time at or before the firing for %s', (_case, now, tick) => {
    expect(cronTickOf(everySecond, at(now))).toEqual({ tick: at(tick), period: 1000, next: at(tick) + 1000 });
  });

  it('takes a timer for the tick ahead only within min(50 ms, a tenth of the period) of it', () => {
    const tick = at('2026-01-01T10:05:00.000Z');
    expect(cronTickOf(everyFiveMinutes, tick - 50).tick).toBe(tick);
    expect(cronTickOf(everyFiveMinutes, tick - 51).tick).toBe(tick - 300_000);
  });

  it('records the next fire time after a start past mid-period, not one period later (issue 36, item 11)', () => {
    const tick = at('2026-01-01T10:05:00.000Z');
    // A replica starting 3 min 20 s into a five-minute period: the next tick is 1 min 40 s away.
    expect(cronTickOf(everyFiveMinutes, tick + 200_000)).toEqual({ tick, period: 300_000, next: tick + 300_000 });
    const job: ScheduledJob = { label: 'Reports.run', schedule: scheduleOf(Jobs.prototype.fiveMinutes)!, runs: 'once-per-tick' };
    const plan = planTick(job, 'replica-a', tick + 200_000);
    expect(plan.next((plan.source as { at: number }).at)).toBe(tick + 300_000);
  });

  it('names the same five-minute tick on replicas whose clocks are a minute apart, each firing by its own clock', () => {
    const tick = at('2026-01-01T10:05:00.000Z');
    // Each replica's timer fires when its own clock reads the fire time, then later by its load: 0 to 120 s late.
    for (const late of [0, 1, 250, 60_000, 120_000]) expect(cronTickOf(everyFiveMinutes, tick + late).tick).toBe(tick);
    expect(cronTickOf(everyFiveMinutes, tick)).toMatchObject({ period: 300_000, next: tick + 300_000 });
  });

  it('follows the expression across irregular gaps and time zones', () => {
    const weekdays = new CronTime('0 0 9 * * 1-5', 'Europe/Paris');
    // Friday 2026-01-02 09:00 in Paris is 08:00 UTC; the next fire is Monday.
    const friday = at('2026-01-02T08:00:00.000Z');
    expect(cronTickOf(weekdays, friday + 500)).toEqual({ tick: friday, period: 3 * 86_400_000, next: friday + 3 * 86_400_000 });
  });

  /** Counts `getNextDateFrom` calls on `time`. */
  function counted(time: CronTime): { time: CronTime; calls: () => number } {
    const spy = jest.spyOn(time, 'getNextDateFrom');
    return { time, calls: () => spy.mock.calls.length };
  }

  it('names the last tick of a dense-then-sparse day in a few steps (issue 36, item 13)', () => {
    // Every second from 09:00:00 to 17:59:59 on weekdays (UTC): Wednesday 2026-01-07's last tick, then Monday's first.
    const last = at('2026-01-07T17:59:59.000Z');
    const office = counted(new CronTime('* * 9-17 * * 1-5', 'UTC'));
    expect(cronTickOf(office.time, last + 300)).toEqual({ tick: last, period: 15 * 3_600_000 + 1000, next: at('2026-01-08T09:00:00.000Z') });
    expect(office.calls()).toBeLessThanOrEqual(6);
    // A timer 45 min into the gap after Friday's last tick (the weekend ahead) still names that tick.
    const friday = at('2026-01-09T17:59:59.000Z');
    const late = counted(new CronTime('* * 9-17 * * 1-5', 'UTC'));
    expect(cronTickOf(late.time, friday + 45 * 60_000).tick).toBe(friday);
    // About twice log2 of the 2 700 s gap, plus the two ahead and one doubling past it.
    expect(late.calls()).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(2700)) + 6);
    // From anywhere in the gap (timers up to 15 h late), the same tick: never one of the seconds before it.
    for (let late = 1_337; late < 15 * 3_600_000; late += 1_234_567) {
      expect(new Date(cronTickOf(new CronTime('* * 9-17 * * 1-5', 'UTC'), friday + late).tick)).toEqual(new Date(friday));
    }
  });

  it('names a monthly tick from late in the month in a bounded number of steps', () => {
    const first = at('2026-02-01T00:00:00.000Z');
    const monthly = counted(new CronTime('0 0 0 1 * *', 'UTC'));
    expect(cronTickOf(monthly.time, at('2026-02-27T23:59:59.999Z'))).toEqual({ tick: first, period: 28 * 86_400_000, next: at('2026-03-01T00:00:00.000Z') });
    expect(monthly.calls()).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(28 * 86_400)) + 6);
  });

  it('names a one-off date by itself', () => {
    const date = new Date('2030-01-01T00:00:00.000Z');
    expect(cronTickOf(new CronTime(date), Date.now()).tick).toBe(date.getTime());
  });
});

describe('scheduleOf: the schedule of a decorated method', () => {
  it('reads the cron expression and its zone, the interval, and nothing for a disabled job or a plain method', () => {
    expect(scheduleOf(Jobs.prototype.nightly)).toMatchObject({ kind: 'cron', description: 'cron 0 */5 * * * * (Europe/Paris)' });
    expect(scheduleOf(Jobs.prototype.poll)).toEqual({ kind: 'interval', description: 'every 2500 ms', ms: 2500 });
    expect(scheduleOf(Jobs.prototype.off)).toBeUndefined();
    expect(scheduleOf(Jobs.prototype.plain)).toBeUndefined();
  });
});
