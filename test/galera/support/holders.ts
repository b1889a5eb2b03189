import type { GaleraDatabase } from './galera.js';

/*
 * The holders' side of the Galera specs, shared by galera-soak.spec.ts (and meant for galera-grants.spec.ts, which
 * still has its own copies of the same helpers: another change is under way there).
 */

/**
 * The holders' side of a name: how many hold it now (entered right after `tryLocks` answered, left right before
 * `releaseLocks` or the fenced commit, so the windows lie inside the real grants), the most seen at once, every entry
 * beyond `limit`, and the stamps in the order the holders got them.
 */
export class HolderWitness {
  current = 0;
  max = 0;
  breaches = 0;
  readonly entries: { stamp: number; app: string }[] = [];

  constructor(private readonly limit: number) {}

  enter(stamp: number, app: string): void {
    this.current++;
    this.max = Math.max(this.max, this.current);
    if (this.current > this.limit) this.breaches++;
    this.entries.push({ stamp, app });
  }

  leave(): void {
    this.current--;
  }

  /** Entries whose stamp is not larger than the one before (fencing tokens must grow in grant order). */
  stampInversions(): string[] {
    const inversions: string[] = [];
    for (let i = 1; i < this.entries.length; i++) {
      const [before, after] = [this.entries[i - 1]!, this.entries[i]!];
      if (after.stamp <= before.stamp) inversions.push(`${before.app}:${before.stamp} then ${after.app}:${after.stamp}`);
    }
    return inversions;
  }
}

/** Errors the callers met, counted by name and text (a raw driver error or a typed one). */
export class ErrorTally {
  readonly counts = new Map<string, number>();
  readonly kinds = new Map<string, number>();
  total = 0;

  add(error: unknown): void {
    const err = error as { name?: string; message?: string; code?: string };
    const kind = `${err?.name ?? typeof error}${err?.code ? ` ${err.code}` : ''}`;
    const key = `${kind}: ${String(err?.message ?? error).slice(0, 160)}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    this.kinds.set(kind, (this.kinds.get(kind) ?? 0) + 1);
    this.total++;
  }

  list(): string[] {
    return [...this.counts].map(([key, count]) => `${count} × ${key}`);
  }

  /** Counts by error class and code only, e.g. `{ 'LockStoreError ER_UNKNOWN_COM_ERROR': 12 }`. */
  byKind(): Record<string, number> {
    return Object.fromEntries(this.kinds);
  }
}

/** A `locking_log` row of a name. */
export interface LogGrant {
  stamp: string;
  app_id: string;
  status: string;
  ended_by: string | null;
  end_reason: string | null;
  acquired: string;
  ended: string | null;
}

/**
 * The `locking_log` grants of `name` (read on node 1 after it applied everything) and how many of them overlap:
 * intervals [acquired, ended) of the database's clock (one machine: the nodes share it). `limit` holders may overlap.
 */
export async function logOverlaps(
  db: GaleraDatabase,
  name: string,
  limit: number,
): Promise<{ grants: number; maxAtOnce: number; beyond: number; rows: LogGrant[] }> {
  const rows = await db.queryOn<LogGrant>(
    1,
    `SELECT stamp, app_id, status, ended_by, end_reason,
            DATE_FORMAT(acquired, '%Y-%m-%d %H:%i:%s.%f') AS acquired, DATE_FORMAT(ended, '%Y-%m-%d %H:%i:%s.%f') AS ended
       FROM locking_log WHERE JSON_CONTAINS(lock_names, JSON_QUOTE(?))`,
    [name],
  );
  // Ends before starts at the same instant: a grant that starts as another ends does not overlap it.
  const events = rows.flatMap((row) => [
    { at: row.acquired, delta: 1 },
    { at: row.ended ?? '9999-12-31 23:59:59.999999', delta: -1 },
  ]);
  events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.delta - b.delta));
  let now = 0;
  let maxAtOnce = 0;
  let beyond = 0;
  for (const event of events) {
    now += event.delta;
    if (event.delta > 0 && now > limit) beyond++;
    maxAtOnce = Math.max(maxAtOnce, now);
  }
  return { grants: rows.length, maxAtOnce, beyond, rows };
}

/** The log's grants that no holder was told of (tryLocks answered 0 or threw), as text. */
export function grantsNoHolderSaw(log: { rows: readonly LogGrant[] }, witness: HolderWitness): string[] {
  const seen = new Set(witness.entries.map((entry) => String(entry.stamp)));
  return log.rows
    .filter((row) => !seen.has(String(row.stamp)))
    .map((row) => `${row.stamp} ${row.app_id} ${row.status} ${row.acquired}…${row.ended ?? ''} by ${row.ended_by ?? '-'}: ${row.end_reason ?? '-'}`);
}
