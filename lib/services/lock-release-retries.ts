/**
 * The clean-ups that failed while the database was away (a release, the removal of a waiter's rows), and the renewal
 * while it fails, made again as soon as it answers.
 * @internal
 */
import { bounded, jittered, NEVER, sleep } from '../utils/wait-timing.util.js';

/** The first retry comes this soon after a failure: a reset connection is usually replaced at once. */
export const FIRST_RETRY_MS = 5;

/**
 * The pause between two rounds of retries never grows beyond this (with jitter: 50–100 % of it), so that what failed
 * goes through within this long of the database accepting writes again. One round at a time for the whole process:
 * a database that stays away sees at most a few attempts a second from it, whatever the number of clean-ups waiting.
 */
export const MAX_RETRY_MS = 250;

/**
 * Clean-ups to make again until they succeed: each under a key (a stamp's release, a waiter's rows), so that one
 * queued twice is made once. A failure schedules a round of retries after `FIRST_RETRY_MS`, doubling up to
 * `MAX_RETRY_MS` while rounds keep failing (jittered); a round that succeeds for some keys drops them. The renewal
 * task's `runNow()` is a backstop (it makes a round at once). `stop()` ends the retries for good (at shutdown).
 * @internal
 */
export class LockReleaseRetries {
  private readonly pending = new Map<string, () => Promise<unknown>>();
  private timer?: NodeJS.Timeout;
  private delay = FIRST_RETRY_MS;
  private round?: Promise<void>;
  private stopped = false;

  /** Queues `cleanUp` under `key` (replacing one queued under it), to make again until it succeeds. */
  add(key: string, cleanUp: () => Promise<unknown>): void {
    if (this.stopped) return;
    if (this.pending.size === 0) this.delay = FIRST_RETRY_MS;
    this.pending.set(key, cleanUp);
    this.schedule();
  }

  /** Whether a clean-up is queued under `key`. */
  has(key: string): boolean {
    return this.pending.has(key);
  }

  /** The keys queued, that start with `prefix`. */
  keys(prefix: string): string[] {
    return [...this.pending.keys()].filter((key) => key.startsWith(prefix));
  }

  /**
   * Makes a round now (or awaits the one in flight): every queued clean-up once.
   * @throws the first failure of the round (what failed stays queued).
   */
  runNow(): Promise<void> {
    if (this.round) return this.round;
    clearTimeout(this.timer);
    this.timer = undefined;
    const round = this.makeRound().finally(() => {
      this.round = undefined;
      this.schedule();
    });
    this.round = round;
    return round;
  }

  /**
   * Makes rounds until nothing is queued under `prefix` or `until` (a `Date.now()` value) has passed (at shutdown:
   * the database is still open, and the clean-ups are not left to expire).
   */
  async drain(prefix: string, until: number): Promise<void> {
    for (let delay = FIRST_RETRY_MS; this.keys(prefix).length > 0 && Date.now() < until; delay = Math.min(delay * 2, MAX_RETRY_MS)) {
      await bounded(this.runNow(), until, NEVER).catch(() => undefined);
      if (this.keys(prefix).length > 0) await sleep(Math.min(jittered(delay), until - Date.now()), NEVER);
    }
  }

  /** Ends the retries for good: what is still queued is dropped (leases and waiter rows then expire by themselves). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
  }

  /** Every queued clean-up once; those that succeed leave the queue. Rejects with the first failure. */
  private async makeRound(): Promise<void> {
    const results = await Promise.allSettled(
      [...this.pending].map(async ([key, cleanUp]) => {
        await cleanUp();
        // Queued again meanwhile (a newer clean-up under the same key): that one stays.
        if (this.pending.get(key) === cleanUp) this.pending.delete(key);
      }),
    );
    const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Arms the next round, unless one is armed or in flight, or nothing is queued. */
  private schedule(): void {
    if (this.stopped || this.timer || this.round || this.pending.size === 0) return;
    const delay = jittered(this.delay);
    this.delay = Math.min(this.delay * 2, MAX_RETRY_MS);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.runNow().then(() => (this.delay = FIRST_RETRY_MS), () => undefined);
    }, delay);
    this.timer.unref(); // a clean-up never keeps the process alive
  }
}
