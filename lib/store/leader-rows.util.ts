import type { LockLeaderInfo, LockRoleCandidate } from '../interfaces/index.js';

/**
 * A row of `SELECT_LEADERS` (both dialects): one per role and candidate waiting for it (one with null candidate
 * columns when none waits), ordered by role, then by the candidates' waiting order. The term columns are null for a
 * role never won; `term_live` is true while the term's grant is live. @internal
 */
export interface LeaderRow {
  readonly role: string;
  readonly term: string | number | null;
  readonly stamp: string | number | null;
  readonly app_id: string | null;
  readonly instance: string | null;
  /** A `Date` (PostgreSQL) or an ISO 8601 string in UTC (MySQL/MariaDB). */
  readonly elected: Date | string | null;
  /** true/false (PostgreSQL), 1/0 (MySQL/MariaDB). */
  readonly term_live: boolean | number | string | null;
  readonly lease_left_ms: number | string | null;
  readonly candidate: string | null;
  readonly candidate_app_id: string | null;
  readonly waiting_for_ms: number | string | null;
}

/** The roles of `rows` in the library's vocabulary, in the rows' order, candidates numbered from 1. @internal */
export function toLeaderInfos(rows: readonly LeaderRow[]): LockLeaderInfo[] {
  const roles = new Map<string, { info: LockLeaderInfo; candidates: LockRoleCandidate[] }>();
  for (const row of rows) {
    let entry = roles.get(row.role);
    if (entry === undefined) {
      const leading = row.term_live === true || Number(row.term_live) === 1;
      const candidates: LockRoleCandidate[] = [];
      const info: LockLeaderInfo = {
        role: row.role,
        leader:
          leading && row.app_id !== null && row.instance !== null && row.elected !== null
            ? {
                appId: row.app_id,
                instance: row.instance,
                term: Number(row.term),
                since: new Date(row.elected),
                stamp: Number(row.stamp),
                leaseLeftMs: Number(row.lease_left_ms),
              }
            : null,
        term: row.term === null ? 0 : Number(row.term),
        candidates,
      };
      roles.set(row.role, (entry = { info, candidates }));
    }
    if (row.candidate !== null && row.candidate_app_id !== null) {
      entry.candidates.push({
        position: entry.candidates.length + 1,
        appId: row.candidate_app_id,
        waitingForMs: Number(row.waiting_for_ms),
        waiter: row.candidate,
      });
    }
  }
  return [...roles.values()].map((entry) => entry.info);
}
