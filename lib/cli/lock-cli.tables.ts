import type { LockGrant, LockLogEntry, LockPermitsEntry, LockWaiterInfo } from '../interfaces/index.js';
import { type Column, duration, locksText, timestamp } from './lock-cli.output.js';

/** The columns of the grants table. @internal */
export const GRANT_COLUMNS: ReadonlyArray<Column<LockGrant>> = [
  { heading: 'stamp', cell: (g) => String(g.stamp), right: true },
  { heading: 'app', cell: (g) => g.appId },
  { heading: 'instance', cell: (g) => g.instance },
  { heading: 'locks', cell: (g) => locksText(g.locks) },
  { heading: 'held for', cell: (g) => duration(g.heldForMs), right: true },
  { heading: 'lease left', cell: (g) => duration(g.leaseLeftMs), right: true },
];

/** The columns of the waiters table. @internal */
export const WAITER_COLUMNS: ReadonlyArray<Column<LockWaiterInfo>> = [
  { heading: 'position', cell: (w) => String(w.position), right: true },
  { heading: 'app', cell: (w) => w.appId },
  { heading: 'locks', cell: (w) => locksText(w.locks) },
  { heading: 'waiting for', cell: (w) => duration(w.waitingForMs), right: true },
  { heading: 'gives up in', cell: (w) => duration(w.givesUpAt && w.givesUpAt.getTime() - Date.now()), right: true },
  { heading: 'waiter', cell: (w) => w.waiter },
];

/** The columns of the permits table. @internal */
export const PERMITS_COLUMNS: ReadonlyArray<Column<LockPermitsEntry>> = [
  { heading: 'name', cell: (p) => p.name },
  { heading: 'mode', cell: (p) => p.mode },
  { heading: 'permits', cell: (p) => String(p.permits), right: true },
];

/** The columns of the log table. @internal */
export const LOG_COLUMNS: ReadonlyArray<Column<LockLogEntry>> = [
  { heading: 'stamp', cell: (e) => String(e.stamp), right: true },
  { heading: 'app', cell: (e) => e.appId },
  { heading: 'locks', cell: (e) => locksText(e.locks) },
  { heading: 'status', cell: (e) => e.status },
  { heading: 'acquired', cell: (e) => timestamp(e.acquiredAt) },
  { heading: 'ended', cell: (e) => timestamp(e.endedAt) },
  { heading: 'ended by', cell: (e) => e.endedBy ?? '-' },
  { heading: 'reason', cell: (e) => e.endReason ?? '-' },
];
