import type { Logger } from '@nestjs/common';
import { LockStartupTimeoutError } from '../errors/index.js';
import { isTransientStoreFault } from '../store/transient-fault.util.js';
import { jittered, NEVER, sleep } from './wait-timing.util.js';

/** First pause of start-up after a transient failure (ms); it doubles, jittered. */
const STARTUP_FIRST_DELAY_MS = 100;
/** Longest pause of start-up between two tries (ms). */
const STARTUP_MAX_DELAY_MS = 2_000;
/**
 * Shortest time an attempt is given to connect (ms), even when the budget has (nearly) run out: the first attempt with
 * `startupTimeoutMs: 0`, and the last one, made at the deadline after a pause.
 */
const MIN_ATTEMPT_MS = 1_000;
/** After how long an attempt that has not settled is logged as a wait (ms; half the attempt's time, when shorter). */
const SLOW_ATTEMPT_MS = 2_000;
/**
 * How near the deadline a failure counts as past it (ms): an attempt given the rest of the budget fails by its own
 * timer, which may fire a millisecond before `performance.now()` reaches the deadline (the event loop's cached clock).
 */
const DEADLINE_SLACK_MS = 10;

/** How a step of start-up is tried: its name, the deadline (`performance.now()` time) and the budget it came from. */
export interface StartupStep {
  /** What the step does, for the log line and `LockStartupTimeoutError` ("the server check"). */
  readonly what: string;
  /** When start-up gives up, on `performance.now()`'s clock. */
  readonly deadline: number;
  /** The `startupTimeoutMs` the deadline came from, for the error. */
  readonly startupTimeoutMs: number;
  /** The longest an attempt may wait for a connection (`queryTimeoutMs`): the budget left bounds it further. */
  readonly maxAttemptMs: number;
  readonly logger: Logger;
}

/**
 * Runs `step` until it succeeds, trying again after a transient failure (`isTransientStoreFault`; a jittered pause
 * doubling from 100 ms to 2 s) while the deadline has not passed. Each attempt is given `attemptMs`, the time its
 * connection attempts may wait: what is left of the budget (at least 1 s, at most `maxAttemptMs`), so that a server
 * that accepts connections and never answers ends start-up at the deadline. What start-up waits for is logged once:
 * at the first failure, or when an attempt has not settled after 2 s (half its time, when shorter). Once a transient
 * failure was seen, an error that `afterFault` accepts is tried again too.
 * @throws LockStartupTimeoutError once the deadline has passed; any other failure at once.
 * @internal
 */
export async function retryingStartup<T>(
  { what, deadline, startupTimeoutMs, maxAttemptMs, logger }: StartupStep,
  step: (attemptMs: number) => Promise<T>,
  afterFault: (error: unknown) => boolean = () => false,
): Promise<T> {
  let delayMs = STARTUP_FIRST_DELAY_MS;
  let told = false;
  for (let attempt = 1; ; attempt++) {
    const started = performance.now();
    const attemptMs = Math.ceil(Math.min(maxAttemptMs, Math.max(deadline - started, MIN_ATTEMPT_MS)));
    const onSlow = () => {
      if (told) return;
      told = true;
      const now = performance.now();
      logger.warn(
        `Start-up waits for the database: ${what} has had no answer for ${Math.round(now - started)} ms; start-up ` +
          `gives up in ${Math.round(Math.max(deadline, started + attemptMs) - now)} ms unless it answers (LockModule ` +
          'option startupTimeoutMs)',
      );
    };
    try {
      const result = await attemptOnce(step, attemptMs, onSlow);
      if (attempt > 1 || told) logger.log(`Start-up went on: ${what} succeeded at attempt ${attempt}`);
      return result;
    } catch (error) {
      if (!isTransientStoreFault(error) && !(attempt > 1 && afterFault(error))) throw error;
      const left = deadline - performance.now();
      if (left <= DEADLINE_SLACK_MS) throw new LockStartupTimeoutError(startupTimeoutMs, what, attempt, error);
      if (!told) {
        told = true;
        logger.warn(
          `Start-up waits for the database: ${what} failed (${(error as Error).message}); trying again for up to ` +
            `${Math.round(left)} ms more (LockModule option startupTimeoutMs)`,
        );
      }
      await sleep(Math.min(left, jittered(delayMs)), NEVER);
      delayMs = Math.min(delayMs * 2, STARTUP_MAX_DELAY_MS);
    }
  }
}

/** One attempt of `step`, calling `onSlow` if it has not settled after 2 s (half `attemptMs`, when shorter). */
async function attemptOnce<T>(
  step: (attemptMs: number) => Promise<T>,
  attemptMs: number,
  onSlow: () => void,
): Promise<T> {
  const slow = setTimeout(onSlow, Math.min(SLOW_ATTEMPT_MS, attemptMs / 2));
  try {
    return await step(attemptMs);
  } finally {
    clearTimeout(slow);
  }
}
