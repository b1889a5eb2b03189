import { Injectable } from '@nestjs/common';

/** How something this instance tried turned out. */
export type ActivityOutcome = 'done' | 'skipped' | 'refused' | 'failed';

/** One line of the console's "this instance" feed. */
export interface ActivityEntry {
  /** When it ended (this process's clock: it is only ever shown, never compared with database times). */
  readonly at: string;
  /** What ran, e.g. `ws1-rebuild`, `repayment`, `GET /ws1/rates`. */
  readonly what: string;
  readonly outcome: ActivityOutcome;
  /** A short human description. */
  readonly detail: string;
}

/** The last things this instance's jobs and requests did, newest first, for the lock console. */
@Injectable()
export class ActivityService {
  private static readonly KEEP = 40;
  private entries: ActivityEntry[] = [];

  /** Records one outcome. */
  record(what: string, outcome: ActivityOutcome, detail: string): void {
    const entry: ActivityEntry = { at: new Date().toISOString(), what, outcome, detail };
    this.entries = [entry, ...this.entries].slice(0, ActivityService.KEEP);
  }

  /** The newest entries first. */
  latest(limit = ActivityService.KEEP): readonly ActivityEntry[] {
    return this.entries.slice(0, limit);
  }
}
