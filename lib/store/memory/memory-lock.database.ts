import type { LockJobAction, LockJobOutcome, LockLogStatus, LockRequest } from '../../interfaces/index.js';
import type { ListenerCallbacks } from '../lock.store.js';

/** How the tables spell a mode. @internal */
export type ModeCode = 'R' | 'W';

/** A row of `locking`: one lock of a live grant. @internal */
export interface MemoryLockRow {
  readonly name: string;
  readonly mode: ModeCode;
  readonly appId: string;
  readonly stamp: number;
}

/** A row of `locking_log`: one grant, from its acquisition to its end. @internal */
export interface MemoryLogRow {
  readonly stamp: number;
  readonly appId: string;
  readonly instance: string;
  readonly locks: readonly LockRequest[];
  status: LockLogStatus;
  readonly acquired: number;
  leaseExpires: number;
  businessDone: number | null;
  ended: number | null;
  endedBy: string | null;
  endReason: string | null;
}

/** A row of `locking_waiters`: one name a waiter waits for. @internal */
export interface MemoryWaiterRow {
  readonly name: string;
  readonly waiter: string;
  readonly mode: ModeCode;
  readonly appId: string;
  /** Registration order: the waiter's position is the smallest `seq` of its rows. */
  readonly seq: number;
  readonly registered: number;
  expires: number;
}

/** The session holding an app id's instance lock. @internal */
export interface MemoryClaim {
  readonly pid: number;
  readonly instance: string;
  alive: boolean;
}

/** A row of the run history (`locking_job_run`). @internal */
export interface MemoryJobRunRow {
  readonly job: string;
  readonly tick: number;
  outcome: Exclude<LockJobOutcome, 'abandoned'>;
  appId: string | null;
  stamp: number | null;
  started: number | null;
  durationMs: number | null;
  error: string | null;
  skippedBusy: number;
  skippedElsewhere: number;
  /** Until when the tick can still be claimed (epoch ms). */
  claimableUntil: number;
  /** A "run now", not a tick of the schedule. */
  manual?: boolean;
  /** Who asked for the manual run, or paused the job. */
  actor?: string | null;
  /** Why. */
  reason?: string | null;
}

/** A paused job (`locking_job_pause`). @internal */
export interface MemoryJobPause {
  readonly actor: string;
  readonly reason: string;
  /** Since when (epoch ms). */
  readonly since: number;
}

/** A job's row (`locking_job`). @internal */
export interface MemoryJobRow {
  readonly job: string;
  schedule: string;
  nextTick: number | null;
  lastSucceeded: number | null;
  /** Last registered, kept or run (epoch ms). */
  updated: number;
}

/** A role's row (`locking_leaders`). @internal */
export interface MemoryLeaderRow {
  term: number;
  stamp: number;
  appId: string;
  instance: string;
  elected: number;
}

const TABLE_KEY = (name: string, mode: ModeCode) => `${mode}\u0000${name}`;

/**
 * The lock tables of `LockTestingModule`, kept in this process's memory: the grants, their log, the permits, the
 * waiters, the instance locks, the run history of scheduled jobs and the terms of leader election. Each testing module
 * makes its own unless you give it one: share one `InMemoryLockDatabase` between several modules (several `appId`s)
 * to test how instances contend, as they would on one database.
 *
 * ```ts
 * const database = new InMemoryLockDatabase();
 * const one = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ appId: 'one', database })] }).compile();
 * const two = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ appId: 'two', database })] }).compile();
 * ```
 * Its clock is `Date.now()`: leases end on it. Its operations do not depend on timers, so they also run under a
 * test's fake timers (the module's lease renewal and a wait's re-checks do: advance them).
 * @publicApi
 */
export class InMemoryLockDatabase {
  /** @internal */ readonly locks: MemoryLockRow[] = [];
  /** @internal */ readonly log = new Map<number, MemoryLogRow>();
  /** @internal */ readonly permits = new Map<string, number>();
  /** @internal */ readonly waiters: MemoryWaiterRow[] = [];
  /** @internal */ readonly claims = new Map<string, MemoryClaim>();
  /** @internal */ readonly instances = new Map<string, { instance: string; processKey: string | null; claimed: number }>();
  /** @internal */ readonly jobRuns = new Map<string, MemoryJobRunRow>();
  /** @internal */ readonly jobs = new Map<string, MemoryJobRow>();
  /** @internal */ readonly leaders = new Map<string, MemoryLeaderRow>();
  /** @internal */ readonly jobPauses = new Map<string, MemoryJobPause>();
  /** @internal */ readonly jobActions: LockJobAction[] = [];
  private readonly listeners = new Set<ListenerCallbacks>();
  private stampSeq = 0;
  private waiterSeq = 0;
  private pidSeq = 0;

  /** Now on the database's clock (epoch ms). @internal */
  now(): number {
    return Date.now();
  }

  /** The next stamp: strictly increasing for the life of this database. @internal */
  nextStamp(): number {
    return ++this.stampSeq;
  }

  /** @internal */
  nextWaiterSeq(): number {
    return ++this.waiterSeq;
  }

  /** @internal */
  nextPid(): number {
    return ++this.pidSeq;
  }

  /** The permits row of (`name`, `mode`), undefined when it has none. @internal */
  permitsOf(name: string, mode: ModeCode): number | undefined {
    return this.permits.get(TABLE_KEY(name, mode));
  }

  /** Writes (or, with `null`, deletes) a permits row; every waiter is woken, as the table's trigger does. @internal */
  setPermits(name: string, mode: ModeCode, permits: number | null): void {
    if (permits === null) this.permits.delete(TABLE_KEY(name, mode));
    else this.permits.set(TABLE_KEY(name, mode), permits);
    this.notify('*');
  }

  /** The permits rows. @internal */
  permitsRows(): Array<{ name: string; mode: ModeCode; permits: number }> {
    return [...this.permits].map(([key, permits]) => {
      const [mode, name] = key.split('\u0000') as [ModeCode, string];
      return { name, mode, permits };
    });
  }

  /** The lock rows of `name`. @internal */
  holders(name: string): MemoryLockRow[] {
    return this.locks.filter((row) => row.name === name);
  }

  /** Deletes the lock rows that match; returns them. @internal */
  deleteLocks(match: (row: MemoryLockRow) => boolean): MemoryLockRow[] {
    const deleted: MemoryLockRow[] = [];
    for (let i = this.locks.length - 1; i >= 0; i--) {
      const row = this.locks[i]!;
      if (match(row)) deleted.unshift(...this.locks.splice(i, 1));
    }
    return deleted;
  }

  /** Deletes the waiter rows that match; returns them. @internal */
  deleteWaiters(match: (row: MemoryWaiterRow) => boolean): MemoryWaiterRow[] {
    const deleted: MemoryWaiterRow[] = [];
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (match(this.waiters[i]!)) deleted.unshift(...this.waiters.splice(i, 1));
    }
    return deleted;
  }

  /** `locking_notify_freed`: wakes the listeners when somebody waits for one of `names`. @internal */
  notifyFreed(names: readonly string[]): void {
    if (names.length > 0 && this.waiters.some((row) => names.includes(row.name))) this.notify([...new Set(names)]);
  }

  /** Adds a listening session; returns its close. @internal */
  listen(callbacks: ListenerCallbacks): () => void {
    this.listeners.add(callbacks);
    return () => void this.listeners.delete(callbacks);
  }

  /**
   * Delivers a notification after the current "transaction", as the database does after its commit (a promise job,
   * which a test's fake timers do not hold back, unlike `queueMicrotask`).
   */
  private notify(names: readonly string[] | '*'): void {
    for (const listener of [...this.listeners]) void Promise.resolve(names).then(listener.freed);
  }
}
