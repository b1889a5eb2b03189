import type { Logger } from '@nestjs/common';
import { LockTablesMissingError } from '../errors/index.js';
import type { JobRunStore, RunRequest } from '../store/job-runs.store.js';
import { messageOf } from './job-run.util.js';

/**
 * How often each replica looks for the "run now" requests of its jobs, on average (ms): each look comes 0.5 to 1.5
 * times this after the one before, at random, so that the looks never stay in step with a schedule that keeps the
 * job's locks busy at the same moment of every second (a request would then find them busy at every look).
 * @internal
 */
export const RUN_REQUEST_POLL_MS = 1000;

/** The delay before the next look for requests: `RUN_REQUEST_POLL_MS`, spread ±50 % at random. */
const nextPollMs = (): number => RUN_REQUEST_POLL_MS * (0.5 + Math.random());

/** Runs one request of a job on this replica (under the job's locks; the claim decides whether it runs here). @internal */
export type RunRequested = (request: RunRequest) => Promise<unknown>;

/**
 * Looks for the "run now" requests of this replica's jobs about every `RUN_REQUEST_POLL_MS` and tries each, one attempt at
 * a time per request on this replica: every replica that has the job tries it, under the job's locks, and the claim
 * lets exactly one of them run it. A request found busy (its locks held, or another run of the job going) stays
 * `requested` and is tried again at the next poll: it waits for the run under way, and never overlaps it.
 * @internal
 */
export class JobRequestsPoller {
  private readonly runs = new Map<string, RunRequested>();
  private readonly trying = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = false;
  private warned = false;

  constructor(
    private readonly store: JobRunStore,
    private readonly logger: Logger,
    private readonly onMissingTables: () => void,
  ) {}

  /** Lets requests of `job` (its history name) run on this replica through `run`; starts polling. */
  add(job: string, run: RunRequested): void {
    if (this.stopped) return;
    this.runs.set(job, run);
    if (this.timer === undefined) this.schedule();
  }

  /** Looks for requests after `nextPollMs()`, then schedules the next look (until `close`). */
  private schedule(): void {
    this.timer = setTimeout(() => {
      void this.poll().finally(() => {
        if (!this.stopped) this.schedule();
      });
    }, nextPollMs());
    this.timer.unref();
  }

  /** Stops polling (shutdown); attempts under way end as ticks do. */
  close(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One look for requests (also called by the tests). */
  async poll(): Promise<void> {
    if (this.polling || this.stopped || this.runs.size === 0) return;
    this.polling = true;
    try {
      const requests = await this.store.listRequests([...this.runs.keys()]);
      this.warned = false;
      for (const request of requests) this.attempt(request);
    } catch (error) {
      if (error instanceof LockTablesMissingError) this.onMissingTables();
      else if (!this.warned) {
        this.warned = true;
        this.logger.warn(`Could not look for "run now" requests (retried every second): ${messageOf(error)}`);
      }
    } finally {
      this.polling = false;
    }
  }

  private attempt(request: RunRequest): void {
    const key = `${request.tick}\u0000${request.job}`;
    const run = this.runs.get(request.job);
    if (run === undefined || this.trying.has(key) || this.stopped) return;
    this.trying.add(key);
    run(request)
      .catch((error: unknown) => this.logger.error(`${request.job}: the run requested at ${new Date(request.tick).toISOString()} failed: ${messageOf(error)}`))
      .finally(() => this.trying.delete(key));
  }
}
