import { mysqlCodeOf } from './mysql-error.util.js';
import { killQuery, ringRows, selectRemoteRings, selectRingable } from './mysql-doorbell.queries.sql.js';
import { SHOW_WSREP_ON } from './mysql-lock.queries.sql.js';
import type { MysqlStatementRunner, MysqlTransaction } from './mysql-statement.runner.js';

/** The connection ids of a release's `doorbells` (comma-separated; null or empty: none). @internal */
export function doorbellIds(value: unknown): number[] {
  if (value === null || value === undefined) return [];
  return String(value)
    .split(',')
    .map(Number)
    .filter((id) => Number.isSafeInteger(id) && id > 0);
}

/** Whether the session's server is a node of a Galera cluster. */
async function isGaleraNode(session: MysqlTransaction): Promise<boolean> {
  const [row] = await session.select<{ Value?: string }>(SHOW_WSREP_ON);
  return String(row?.Value).toUpperCase() === 'ON';
}

/**
 * Rings the doorbells named by `ids` that run on other nodes of a Galera cluster: their rings rows, those no session
 * of this node holds, written in one transaction (see `selectRemoteRings`). A conflict with another ring of the same
 * rows (1213) drops this one: that ring woke them.
 */
async function ringRemote(session: MysqlTransaction, ids: readonly number[]): Promise<void> {
  await session.write('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
  await session.write('START TRANSACTION');
  try {
    const rows = await session.select<{ app_id: string }>(selectRemoteRings(ids.length), ids);
    if (rows.length > 0) await session.write(ringRows(rows.length), rows.map((row) => row.app_id));
    await session.write('COMMIT');
  } catch (error) {
    await session.write('ROLLBACK').catch(() => undefined);
    throw error;
  }
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
 * SUPER or CONNECTION ADMIN: 1095; any other error) is dropped: the waiters' poll covers it. On a Galera cluster a
 * doorbell not found among this node's threads may sleep on another node (`KILL` reaches this node's threads only):
 * it is rung by a write of its rings row (`ringRemote`).
 * @internal
 */
export class MysqlDoorbellRinger {
  private readonly pending = new Set<number>();
  private ringing = false;
  private readonly verified = new WeakMap<object, Set<number>>();
  /** Whether the server is a node of a Galera cluster (learnt at the first ring that names a doorbell not found here). */
  private galera: boolean | undefined;
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
            // Not a thread of this node: on a Galera cluster, perhaps a doorbell of another node.
            const remote = unchecked.filter((id) => !known.has(id));
            if (remote.length > 0 && (this.galera ??= await isGaleraNode(tx))) await ringRemote(tx, remote);
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
