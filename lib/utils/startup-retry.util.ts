import type { Logger } from '@nestjs/common';
import { LockStartupTimeoutError } from '../errors/index.js';
import { isTransientStoreFault } from '../store/transient-fault.util.js';
import { jittered, NEVER, sleep } from './wait-timing.util.js';

/** First pause of start-up after a transient failure (ms); it doubles, jittered. */
const STARTUP_FIRST_DELAY_MS = 100;
/** Longest pause of start-up between two tries (ms). */
const STARTUP_MAX_DELAY_MS = 2_000;

/** How a step of start-up is tried: its name, the deadline (`performance.now()` time) and the budget it came from. */
export interface StartupStep {
  /** What the step does, for the log line and `LockStartupTimeoutError` ("the server check"). */
  readonly what: string;
  /** When start-up gives up, on `performance.now()`'s clock. */
  readonly deadline: number;
  /** The `startupTimeoutMs` the deadline came from, for the error. */
  readonly startupTimeoutMs: number;
  readonly logger: Logger;
}

/**
 * Runs `step` until it succeeds, trying again after a transient failure (`isTransientStoreFault`; a jittered pause
 * doubling from 100 ms to 2 s) while the deadline has not passed; the first failure is logged once with what start-up
 * waits for. Once a transient failure was seen, an error that `afterFault` accepts is tried again too.
 * @throws LockStartupTimeoutError once the deadline has passed; any other failure at once.
 * @internal
 */
export async function retryingStartup<T>(
  { what, deadline, startupTimeoutMs, logger }: StartupStep,
  step: () => Promise<T>,
  afterFault: (error: unknown) => boolean = () => false,
): Promise<T> {
  let delayMs = STARTUP_FIRST_DELAY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await step();
      if (attempt > 1) logger.log(`Start-up went on: ${what} succeeded at attempt ${attempt}`);
      return result;
    } catch (error) {
      if (!isTransientStoreFault(error) && !(attempt > 1 && afterFault(error))) throw error;
      const left = deadline - performance.now();
      if (left <= 0) throw new LockStartupTimeoutError(startupTimeoutMs, what, attempt, error);
      if (attempt === 1) {
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
