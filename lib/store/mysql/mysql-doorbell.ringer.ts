import { mysqlCodeOf } from './mysql-error.util.js';
import { killQuery, selectRingable } from './mysql-doorbell.queries.sql.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';

/** The connection ids of a release's `doorbells` (comma-separated; null or empty: none). @internal */
export function doorbellIds(value: unknown): number[] {
  if (value === null || value === undefined) return [];
  return String(value)
    .split(',')
    .map(Number)
    .filter((id) => Number.isSafeInteger(id) && id > 0);
}

/** Doorbells verified on one pool connection, at most this many remembered (then forgotten all at once). */
const MAX_VERIFIED = 100;

/**
 * Rings the doorbells a release named, off the caller's path: on one pool connection, a check that each thread runs
 * its doorbell's tagged sleep (`selectRingable`), then `KILL QUERY` of those, on the same session. Connection ids are
 * reused only after a server restart, and a restart ends that session too: a `KILL` sent on it never reaches a thread
 * of the next server. So a thread checked on a pool connection stays that doorbell (or gone) for as long as that
 * connection lives (the doorbell's session runs nothing but its sleeps), and later rings on that connection go
 * without the check: the pool connection objects remember what they checked. Rings requested meanwhile wait for the
 * one in flight and go together. A ring that fails (the thread ended: 1094; refused, another user's thread without
 * SUPER or CONNECTION ADMIN: 1095; any other error) is dropped: the waiters' poll covers it.
 * @internal
 */
export class MysqlDoorbellRinger {
  private readonly pending = new Set<number>();
  private ringing = false;
  private readonly verified = new WeakMap<object, Set<number>>();
  /** Sleeps interrupted, rings refused or failed, and ids left alone (not a doorbell now), since start. */
  readonly counts = { rung: 0, failed: 0, skipped: 0 };

  constructor(private readonly runner: MysqlStatementRunner) {}

  ring(ids: readonly number[]): void {
    if (ids.length === 0) return;
    for (const id of ids) this.pending.add(id);
    if (!this.ringing) void this.ringPending();
  }

  private async ringPending(): Promise<void> {
    this.ringing = true;
    try {
      while (this.pending.size > 0) {
        const ids = [...this.pending];
        this.pending.clear();
        await this.runner
          .onConnection(async (tx, connection) => {
            let known = this.verified.get(connection);
            if (known === undefined || known.size > MAX_VERIFIED) this.verified.set(connection, (known = new Set()));
            const unchecked = ids.filter((id) => !known.has(id));
            const ringable = ids.filter((id) => known.has(id));
            if (unchecked.length > 0) {
              const rows = await tx.select<{ id: number | string }>(selectRingable(unchecked.length), unchecked);
              const checked = rows.map((row) => Number(row.id));
              this.counts.skipped += unchecked.length - checked.length;
              for (const id of checked) known.add(id);
              ringable.push(...checked);
            }
            for (const id of ringable) {
              try {
                await tx.write(killQuery(id));
                this.counts.rung++;
              } catch (error) {
                this.counts.failed++;
                known.delete(id);
                if (mysqlCodeOf(error) !== 'ER_NO_SUCH_THREAD' && mysqlCodeOf(error) !== 'ER_KILL_DENIED_ERROR') throw error;
              }
            }
          })
          .catch(() => {
            this.counts.failed++;
          });
      }
    } finally {
      this.ringing = false;
    }
  }
}
