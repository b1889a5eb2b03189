import { Cron, Interval } from '@nestjs/schedule';
import { CronTime } from 'cron';
import { cronTickOf, scheduleOf } from '../../lib/jobs/job-schedule.util.js';

const at = (iso: string): number => new Date(iso).getTime();

describe('cronTickOf: the fire time a replica timer fired for', () => {
  const everySecond = new CronTime('* * * * * *');
  const everyFiveMinutes = new CronTime('0 */5 * * * *');

  it.each([
    ['exactly on time', '2026-01-01T00:00:05.000Z', '2026-01-01T00:00:05.000Z'],
    ['a timer 3 ms early', '2026-01-01T00:00:04.997Z', '2026-01-01T00:00:05.000Z'],
    ['a timer 400 ms late (a loaded event loop)', '2026-01-01T00:00:05.400Z', '2026-01-01T00:00:05.000Z'],
  ])('names the nearest second for %s', (_case, now, tick) => {
    expect(cronTickOf(everySecond, at(now))).toEqual({ tick: at(tick), period: 1000, next: at(tick) + 1000 });
  });

  it('names the same five-minute tick from replicas whose clocks are up to a minute apart', () => {
    const tick = at('2026-01-01T10:05:00.000Z');
    for (const skew of [-60_000, -1000, 0, 250, 60_000]) {
      expect(cronTickOf(everyFiveMinutes, tick + skew).tick).toBe(tick);
    }
    expect(cronTickOf(everyFiveMinutes, tick)).toMatchObject({ period: 300_000, next: tick + 300_000 });
  });

  it('follows the expression across irregular gaps and time zones', () => {
    const weekdays = new CronTime('0 0 9 * * 1-5', 'Europe/Paris');
    // Friday 2026-01-02 09:00 in Paris is 08:00 UTC; the next fire is Monday.
    const friday = at('2026-01-02T08:00:00.000Z');
    expect(cronTickOf(weekdays, friday + 500)).toEqual({ tick: friday, period: 3 * 86_400_000, next: friday + 3 * 86_400_000 });
  });

  it('names a one-off date by itself', () => {
    const date = new Date('2030-01-01T00:00:00.000Z');
    expect(cronTickOf(new CronTime(date), Date.now()).tick).toBe(date.getTime());
  });
});

describe('scheduleOf: the schedule of a decorated method', () => {
  class Jobs {
    @Cron('0 */5 * * * *', { timeZone: 'Europe/Paris' })
    nightly(): void {}

    @Cron('* * * * * *', { disabled: true })
    off(): void {}

    @Interval(2500)
    poll(): void {}

    plain(): void {}
  }

  it('reads the cron expression and its zone, the interval, and nothing for a disabled job or a plain method', () => {
    expect(scheduleOf(Jobs.prototype.nightly)).toMatchObject({ kind: 'cron', description: 'cron 0 */5 * * * * (Europe/Paris)' });
    expect(scheduleOf(Jobs.prototype.poll)).toEqual({ kind: 'interval', description: 'every 2500 ms', ms: 2500 });
    expect(scheduleOf(Jobs.prototype.off)).toBeUndefined();
    expect(scheduleOf(Jobs.prototype.plain)).toBeUndefined();
  });
});
