import type {
  LockGrant,
  LockGrantFilter,
  LockLogEntry,
  LockLogQuery,
  LockPermitsEntry,
  LockWaiterInfo,
} from '../../interfaces/index.js';
import { LOCK_MIGRATIONS } from '../../migrations/index.js';
import { LockAdminStore, type ForcedGrant, type SchemaRows } from '../lock-admin.store.js';
import { MODE_CODE } from '../lock-sql.constants.js';
import { waiterDeadline } from '../lock-rows.util.js';
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

  /** The in-memory tables are always those of this library version. */
  async schemaRows(): Promise<SchemaRows> {
    return { recorded: LOCK_MIGRATIONS.map((migration) => migration.name), tablesPresent: true };
  }
}
