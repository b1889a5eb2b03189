import type { LockGrant, LockLogEntry, LockLogStatus, LockRequest } from '../interfaces/index.js';
import type { BusyLock } from './lock.store.js';

/** The columns of a `locking_log` row that every report reads. @internal */
export interface LogRow {
  stamp: string;
  app_id: string;
  instance: string;
  lock_names: string[];
  lock_modes: string[];
  acquired: Date;
}

/** A row of `SELECT_GRANTS`. @internal */
export type GrantRow = LogRow & { held_for_ms: number; lease_left_ms: number };

/** A row of `SELECT_LOG`. @internal */
export type LogEntryRow = LogRow & {
  status: LockLogStatus;
  business_done: Date | null;
  ended: Date | null;
  ended_by: string | null;
  end_reason: string | null;
};

/**
 * A JSON array column of MySQL or MariaDB as strings: MySQL's JSON type arrives parsed, MariaDB's (text) does not.
 * @internal
 */
export function jsonArray(value: unknown): string[] {
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return Array.isArray(parsed) ? parsed.map(String) : [];
}

/** The group of a row: names and their modes ('R'/'W'), aligned. @internal */
export function locksOf(names: readonly string[], modes: readonly string[]): LockRequest[] {
  return names.map((name, i) => ({ name, mode: modes[i] === 'W' ? 'write' : 'read' }));
}

function logFields(row: LogRow) {
  return {
    stamp: Number(row.stamp),
    appId: row.app_id,
    instance: row.instance,
    locks: locksOf(row.lock_names, row.lock_modes),
    acquiredAt: row.acquired,
  };
}

/** A grant in the library's vocabulary. @internal */
export function toGrant(row: GrantRow): LockGrant {
  return {
    ...logFields(row),
    heldForMs: row.held_for_ms,
    leaseLeftMs: row.lease_left_ms,
    fencingToken: Number(row.stamp),
  };
}

/** A log entry in the library's vocabulary (`endedBy` and `endReason` only when recorded). @internal */
export function toLogEntry(row: LogEntryRow): LockLogEntry {
  return {
    ...logFields(row),
    status: row.status,
    businessDoneAt: row.business_done,
    endedAt: row.ended,
    ...(row.ended_by === null ? {} : { endedBy: row.ended_by }),
    ...(row.end_reason === null ? {} : { endReason: row.end_reason }),
  };
}

/** A row of the busy-locks query of either dialect. @internal */
export interface BusyRow {
  name: string;
  mode: string;
  busy: BusyLock['reason'];
  held_mode: string | null;
}

/** A busy-locks row in the library's vocabulary. @internal */
export function busyLockOf(row: BusyRow): BusyLock {
  const mode = (code: string) => (code === 'W' ? 'write' : 'read');
  return {
    request: { name: row.name, mode: mode(row.mode) },
    reason: row.busy,
    ...(row.held_mode === null ? {} : { heldFor: mode(row.held_mode) }),
  };
}

/**
 * A waiter's id: a random UUID, then `/` and the wait's deadline in epoch milliseconds (the waiting instance's clock),
 * so that the admin reports can say when the wait gives up without a column of its own (50 characters of the 64).
 * @internal
 */
export function waiterId(uuid: string, deadline: number): string {
  return `${uuid}/${Math.round(deadline)}`;
}

/** When the wait of waiter `waiter` gives up (see `waiterId`); null for an id without a deadline. @internal */
export function waiterDeadline(waiter: string): Date | null {
  const match = /\/(\d{1,16})$/.exec(waiter);
  return match ? new Date(Number(match[1])) : null;
}
