import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { LASTING_TERM_MS, LeaderFailures } from '../../lib/leader/leader-failures.tracker.js';

/**
 * The back-off of a leader's work that keeps failing (issue 48, item 8), over more failures than an integration spec
 * can wait for: the pauses before standing again, their cap, and how many ERROR lines a long streak logs.
 */
describe('LeaderFailures', () => {
  let now = 0;
  const logger = new Logger('test');
  const lines = { error: [] as string[], log: [] as string[] };
  const term = (token: number) => ({ role: 'r', token, since: new Date() });
  const threw = { threw: true, error: new Error('down') } as const;

  beforeEach(() => {
    now = 0;
    lines.error = [];
    lines.log = [];
    jest.spyOn(performance, 'now').mockImplementation(() => now);
    jest.spyOn(logger, 'error').mockImplementation((message: unknown) => void lines.error.push(String(message)));
    jest.spyOn(logger, 'log').mockImplementation((message: unknown) => void lines.log.push(String(message)));
    jest.spyOn(logger, 'debug').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  /** `count` failures in a row, each right after the pause before it; the pauses. */
  const failInARow = (failures: LeaderFailures, count: number, ranMs = 0) => {
    const pauses: number[] = [];
    for (let i = 0; i < count; i++) {
      now += ranMs;
      const pause = failures.workEnded(term(i + 1), threw, ranMs);
      pauses.push(pause);
      now += pause;
    }
    return pauses;
  };

  it('pauses rejoinDelayMs after a first failure, then doubles from 500 ms (rejoinDelayMs 0) up to 30 s', () => {
    const pauses = failInARow(new LeaderFailures('r', 'Work', 0, logger), 10);
    expect(pauses).toEqual([0, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('doubles from rejoinDelayMs when it is longer, and never pauses less than a rejoinDelayMs above the cap', () => {
    expect(failInARow(new LeaderFailures('r', 'Work', 1000, logger), 7)).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    expect(failInARow(new LeaderFailures('r', 'Work', 60_000, logger), 3)).toEqual([60_000, 60_000, 60_000]);
  });

  it('logs one ERROR line at the start of a streak, then at most one a minute, whatever the number of failures', () => {
    failInARow(new LeaderFailures('r', 'Work', 0, logger), 200); // about 100 minutes of failures at the cap
    const minutes = now / 60_000;
    expect(lines.error.length).toBeLessThanOrEqual(Math.ceil(minutes) + 1);
    expect(lines.error.length).toBeGreaterThanOrEqual(Math.floor(minutes / 2));
    expect(lines.error[0]).toMatch(/threw: down; .* stands again in 0 ms/);
    expect(lines.error[1]).toMatch(/threw again: down \(\d+ terms in a row failed/);
  });

  it('resets after a work that returned or a term that lasted', () => {
    const failures = new LeaderFailures('r', 'Work', 0, logger);
    failInARow(failures, 5);
    expect(failures.workEnded(term(6), { threw: false }, 10)).toBe(0);
    expect(lines.log.some((line) => /no longer fails, after 5 failed terms/.test(line))).toBe(true);
    expect(failInARow(failures, 2)).toEqual([0, 500]);
    expect(failInARow(failures, 1, LASTING_TERM_MS)).toEqual([0]); // failed, but after a term that lasted
    failures.told(LASTING_TERM_MS); // a lasting term ended by its signal
    expect(failInARow(failures, 2)).toEqual([0, 500]);
    failures.told(10); // a short one does not end the streak
    expect(failInARow(failures, 1)).toEqual([1000]);
  });
});
