import type {
  LockGrant,
  LockGrantFilter,
  LockLeaderInfo,
  LockLogEntry,
  LockLogQuery,
  LockPermitsEntry,
  LockWaiterInfo,
} from '../../interfaces/index.js';
import { LOCK_MIGRATIONS } from '../../migrations/index.js';
import { LockAdminStore, type ForcedGrant, type SchemaRows } from '../lock-admin.store.js';
import { MODE_CODE } from '../lock-sql.constants.js';
import { waiterDeadline } from '../lock-rows.util.js';
import { type LeaderRow, toLeaderInfos } from '../leader-rows.util.js';
import { LEADER_LOCK_PREFIX } from '../../leader/leader-role.util.js';
import type { InMemoryLockDatabase, MemoryLogRow, MemoryWaiterRow } from './memory-lock.database.js';

const date = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

/** The grant of a log row in the library's vocabulary (`logFields` of the SQL reports). */
function logFields(row: MemoryLogRow) {
  return {
    stamp: row.stamp,
    appId: row.appId,
    instance: row.instance,
    locks: row.locks.map(({ name, mode }) => ({ name, mode })),
    acquiredAt: new Date(row.acquired),
  };
}

/** `LockAdminStore` over an `InMemoryLockDatabase`: the reports and actions of the SQL ones, on the same rows. @internal */
export class MemoryLockAdminStore extends LockAdminStore {
  constructor(private readonly db: InMemoryLockDatabase) {
    super();
  }

  /** `SELECT_GRANTS`: the grants holding a lock row (of `name`, of `appId`), oldest first. */
  async listGrants(filter: LockGrantFilter = {}): Promise<LockGrant[]> {
    const now = this.db.now();
    const stamps = new Set(
      this.db.locks
        .filter((lock) => (filter.name === undefined || lock.name === filter.name) && (filter.appId === undefined || lock.appId === filter.appId))
        .map((lock) => lock.stamp),
    );
    return [...stamps]
      .sort((a, b) => a - b)
      .flatMap((stamp) => {
        const row = this.db.log.get(stamp);
        if (!row) return [];
        return [{ ...logFields(row), heldForMs: now - row.acquired, leaseLeftMs: row.leaseExpires - now, fencingToken: stamp }];
      });
  }

  /** `SELECT_LOG`: the newest rows first. */
  async listLog(query: LockLogQuery & { limit: number }): Promise<LockLogEntry[]> {
    const since = query.since?.getTime();
    return [...this.db.log.values()]
      .filter(
        (row) =>
          (since === undefined || row.acquired >= since || (row.ended !== null && row.ended >= since)) &&
          (query.name === undefined || row.locks.some((lock) => lock.name === query.name)) &&
          (query.stamp === undefined || row.stamp === query.stamp),
      )
      .sort((a, b) => b.stamp - a.stamp)
      .slice(0, query.limit)
      .map((row) => ({
        ...logFields(row),
        status: row.status,
        businessDoneAt: date(row.businessDone),
        endedAt: date(row.ended),
        ...(row.endedBy === null ? {} : { endedBy: row.endedBy }),
        ...(row.endReason === null ? {} : { endReason: row.endReason }),
      }));
  }

  /** `SELECT_WAITERS`: one entry per waiter with a row that has not expired, in waiting order. */
  async listWaiters(name?: string): Promise<LockWaiterInfo[]> {
    const now = this.db.now();
    const byWaiter = new Map<string, MemoryWaiterRow[]>();
    for (const row of this.db.waiters) {
      if (row.expires > now) byWaiter.set(row.waiter, [...(byWaiter.get(row.waiter) ?? []), row]);
    }
    return [...byWaiter]
      .filter(([, rows]) => name === undefined || rows.some((row) => row.name === name))
      .map(([waiter, rows]) => {
        const sorted = [...rows].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        return {
          waiter,
          appId: sorted.map((row) => row.appId).sort()[0]!,
          locks: sorted.map((row) => ({ name: row.name, mode: row.mode === 'W' ? ('write' as const) : ('read' as const) })),
          waitingForMs: now - Math.min(...rows.map((row) => row.registered)),
          expiresInMs: Math.min(...rows.map((row) => row.expires)) - now,
          givesUpAt: waiterDeadline(waiter),
          position: Math.min(...rows.map((row) => row.seq)),
        };
      })
      .sort((a, b) => a.position - b.position)
      .map((info, index) => ({ ...info, position: index + 1 })); // 1, 2, … in waiting order, as the databases'
  }

  async loadPermits(): Promise<LockPermitsEntry[]> {
    return this.db.permitsRows().map(({ name, mode, permits }) => ({ name, mode: mode === 'W' ? 'write' : 'read', permits }));
  }

  async savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void> {
    this.db.setPermits(name, MODE_CODE[mode], permits);
  }

  /** `locking_force_release`: the log row turns FORCED with who and why, the lock rows go, the waiters are woken. */
  async forceRelease(stamp: number, actor: string, reason: string): Promise<ForcedGrant | undefined> {
    const row = this.db.log.get(stamp);
    if (row?.status !== 'ACQUIRED' && row?.status !== 'BUSINESS_DONE') return undefined;
    const now = this.db.now();
    Object.assign(row, { status: 'FORCED', ended: now, endedBy: actor, endReason: reason });
    this.db.deleteLocks((lock) => lock.stamp === stamp);
    this.db.notifyFreed(row.locks.map((lock) => lock.name));
    return { appId: row.appId, instance: row.instance, locks: logFields(row).locks, heldForMs: now - row.acquired };
  }

  /** `SELECT_LEADERS`: the rows the SQL statement returns, made from the same tables. */
  async listLeaders(role?: string): Promise<LockLeaderInfo[]> {
    const db = this.db;
    const now = db.now();
    const lockOf = (name: string) => LEADER_LOCK_PREFIX + name;
    const waiting = db.waiters.filter((row) => row.name.startsWith(LEADER_LOCK_PREFIX) && row.expires > now);
    const roles = new Set([...db.leaders.keys(), ...waiting.map((row) => row.name.slice(LEADER_LOCK_PREFIX.length))]);
    const rows: LeaderRow[] = [...roles]
      .filter((name) => role === undefined || name === role)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap((name): LeaderRow[] => {
        const term = db.leaders.get(name);
        const grant = term && db.log.get(term.stamp);
        const live =
          grant !== undefined &&
          (grant.status === 'ACQUIRED' || grant.status === 'BUSINESS_DONE') &&
          grant.leaseExpires > now &&
          db.locks.some((lock) => lock.stamp === term!.stamp && lock.name === lockOf(name));
        const base = {
          role: name,
          term: term?.term ?? null,
          stamp: term?.stamp ?? null,
          app_id: term?.appId ?? null,
          instance: term?.instance ?? null,
          elected: term === undefined ? null : new Date(term.elected),
          term_live: live,
          lease_left_ms: live ? grant!.leaseExpires - now : null,
        };
        const candidates = waiting.filter((row) => row.name === lockOf(name)).sort((a, b) => a.seq - b.seq);
        if (candidates.length === 0) return [{ ...base, candidate: null, candidate_app_id: null, waiting_for_ms: null }];
        return candidates.map((row) => ({
          ...base,
          candidate: row.waiter,
          candidate_app_id: row.appId,
          waiting_for_ms: now - row.registered,
        }));
      });
    return toLeaderInfos(rows);
  }

  /** The in-memory tables are always those of this library version. */
  async schemaRows(): Promise<SchemaRows> {
    return { recorded: LOCK_MIGRATIONS.map((migration) => migration.name), tablesPresent: true };
  }
}
