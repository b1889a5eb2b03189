import type { Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import type { LeaderTerm } from '../interfaces/index.js';

/** The shortest pause after the second failure in a row, halved (the pauses double from it): for `rejoinDelayMs: 0`. */
const BACKOFF_FLOOR_MS = 250;

/** The longest pause of the back-off (unless `rejoinDelayMs` is longer: then `rejoinDelayMs`). */
const BACKOFF_CAP_MS = 30_000;

/** A term whose work ran this long before it ended lasted: it ends the streak of failures (the back-off resets). */
export const LASTING_TERM_MS = 5_000;

/** How often, at most, a streak of failures logs an ERROR line after its first (the others are logged at debug). */
const FAILURE_LOG_INTERVAL_MS = 60_000;

/** How a leader's work ended its term. */
export type WorkEnd = { readonly threw: false } | { readonly threw: true; readonly error: unknown };

/** The message of what a work threw. */
export function errorMessage(error: unknown): string {
  return String((error as Error | undefined)?.message ?? error);
}

/**
 * The failures of one candidacy's leader work, in a row, and the pause before the replica stands again: a work that
 * throws before its term lasted (`LASTING_TERM_MS`) makes the pauses grow. The first failure of a streak pauses
 * `rejoinDelayMs`; each further one twice the last (from at least `2 × BACKOFF_FLOOR_MS`), up to `BACKOFF_CAP_MS`. A
 * work that returns, or a term that lasted, ends the streak. The first failure of a streak is logged as an ERROR, the
 * next ones at most once a minute (with their count), the others at debug: a failing work does not flood the logs.
 * @internal
 */
export class LeaderFailures {
  /** The failures in a row so far (0: none). */
  private streak = 0;
  /** When the last ERROR line of the streak was logged (`performance.now()`). */
  private loggedAt = -Infinity;
  /** The failures of the streak not logged as an ERROR line since the last one. */
  private unlogged = 0;

  constructor(
    private readonly role: string,
    private readonly label: string,
    private readonly rejoinDelayMs: number,
    private readonly logger: Logger,
  ) {}

  /**
   * The work of `term` ended by itself (it returned or threw) after running `ranMs`: logs it (a failure within the
   * bounds above) and returns the pause before this replica stands again.
   */
  workEnded(term: LeaderTerm, end: WorkEnd, ranMs: number): number {
    const of = `${this.label}, leader of role ${this.role} (term ${term.token})`;
    if (!end.threw || ranMs >= LASTING_TERM_MS) this.endStreak();
    if (!end.threw) {
      this.logger.log(`${of}, returned; the role is handed over`);
      return this.rejoinDelayMs;
    }
    this.streak++;
    const pause = this.pause();
    const again = `the role is handed over, and this replica stands again in ${pause} ms`;
    const now = performance.now();
    if (this.streak === 1) {
      this.loggedAt = now;
      this.logger.error(`${of}, threw: ${errorMessage(end.error)}; ${again}`);
    } else if (now - this.loggedAt >= FAILURE_LOG_INTERVAL_MS) {
      this.loggedAt = now;
      this.logger.error(
        `${of}, threw again: ${errorMessage(end.error)} (${this.streak} terms in a row failed, ${this.unlogged + 1} ` +
          `since the last line); ${again} (backing off, up to ${Math.max(BACKOFF_CAP_MS, this.rejoinDelayMs)} ms)`,
      );
      this.unlogged = 0;
    } else {
      this.unlogged++;
      this.logger.debug(`${of}, threw again (${this.streak} terms in a row): ${errorMessage(end.error)}; ${again}`);
    }
    return pause;
  }

  /** The term's signal fired (lost, resigned, shutdown) after its work ran `ranMs`: a term that lasted ends the streak. */
  told(ranMs: number): void {
    if (ranMs >= LASTING_TERM_MS) this.endStreak();
  }

  private endStreak(): void {
    if (this.streak > 1) {
      this.logger.log(`Role ${this.role}: ${this.label} no longer fails, after ${this.streak} failed terms in a row`);
    }
    this.streak = 0;
    this.unlogged = 0;
  }

  /** The pause after the `streak`-th failure in a row. */
  private pause(): number {
    if (this.streak === 1) return this.rejoinDelayMs;
    const cap = Math.max(BACKOFF_CAP_MS, this.rejoinDelayMs);
    const from = Math.max(this.rejoinDelayMs, BACKOFF_FLOOR_MS);
    return Math.min(cap, from * 2 ** Math.min(this.streak - 1, 30));
  }
}
