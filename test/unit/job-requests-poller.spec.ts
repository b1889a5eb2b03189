import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { JobRequestsPoller, RUN_REQUEST_POLL_MS } from '../../lib/jobs/job-requests.poller.js';
import type { JobRunStore } from '../../lib/store/job-runs.store.js';

/**
 * The looks for "run now" requests never stay in step with a schedule: each comes 0.5–1.5 × RUN_REQUEST_POLL_MS after
 * the one before, at random. With a fixed period, a request for a job whose locks another schedule keeps busy at the
 * same moment of every second found them busy at every look (seen in CI: a per-replica job's "run now" never ran).
 */
describe('JobRequestsPoller', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('looks for requests at random gaps of 0.5–1.5 × its period, and stops when closed', async () => {
    const looks: number[] = [];
    const store = {
      listRequests: async () => {
        looks.push(Date.now());
        return [];
      },
    } as unknown as JobRunStore;
    const poller = new JobRequestsPoller(store, new Logger('test'), () => undefined);
    poller.add('Jobs.report', async () => undefined);
    const started = Date.now();
    for (let i = 0; i < 200; i++) await jest.advanceTimersByTimeAsync(100);
    poller.close();
    const gaps = looks.map((at, i) => at - (i === 0 ? started : looks[i - 1]!));
    expect(looks.length).toBeGreaterThanOrEqual(13); // 20 s at 1 s on average
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(RUN_REQUEST_POLL_MS * 0.5);
      expect(gap).toBeLessThanOrEqual(RUN_REQUEST_POLL_MS * 1.5 + 100);
    }
    expect(new Set(gaps.map((gap) => Math.round(gap / 100))).size).toBeGreaterThan(3); // not one fixed period
    const closedAt = looks.length;
    await jest.advanceTimersByTimeAsync(5000);
    expect(looks.length).toBe(closedAt);
  });
});
