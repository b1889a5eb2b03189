import type { DataSource } from 'typeorm';
import type {
  LockGaleraNode,
  LockGrant,
  LockGrantFilter,
  LockLeaderInfo,
  LockLogEntry,
  LockLogQuery,
  LockLogStatus,
  LockPermitsEntry,
  LockWaiterInfo,
} from '../../interfaces/index.js';
import { LockAdminStore, type ForcedGrant, type SchemaRows } from '../lock-admin.store.js';
import { jsonArray, locksOf, toGrant, toLogEntry, waiterDeadline, type LogRow } from '../lock-rows.util.js';
import * as Admin from './mysql-lock-admin.queries.sql.js';
import { type GaleraNodeRow, SELECT_GALERA_NODE, type ServerValuesSchema } from './mysql-cluster.queries.sql.js';
import { SELECT_LEADERS } from './mysql-leader.queries.sql.js';
import { type LeaderRow, toLeaderInfos } from '../leader-rows.util.js';
import { deleteHandedWaiters } from './mysql-hand-overs.js';
import * as SQL from './mysql-lock.queries.sql.js';
import type { MysqlWakeups } from './mysql-sessions.util.js';
import type { MysqlStatementRunner } from './mysql-statement.runner.js';
import { MODE_CODE } from '../lock-sql.constants.js';

/** A log row as MySQL sends it: JSON arrays (parsed by MySQL's driver, text from MariaDB), times as ISO strings. */
interface MysqlLogRow {
  stamp: string | number;
  app_id: string;
  instance: string;
  lock_names: unknown;
  lock_modes: unknown;
  acquired: string;
}

const dateOf = (iso: string | null): Date | null => (iso === null ? null : new Date(iso));

/** The row in the shape the reports of every dialect convert. */
function logRow(row: MysqlLogRow): LogRow {
  return {
    stamp: String(row.stamp),
    app_id: row.app_id,
    instance: row.instance,
    lock_names: jsonArray(row.lock_names),
    lock_modes: jsonArray(row.lock_modes),
    acquired: new Date(row.acquired),
  };
}

/**
 * What a server without `information_schema.GLOBAL_VARIABLES` answers (MySQL 8 removed it): unknown table (1109), no
 * such table (1146), or the feature disabled (3167, MySQL 5.7's `show_compatibility_56`).
 */
const NO_VALUES_TABLE_ERRNOS = new Set([1109, 1146, 3167]);

/** The driver's errno behind a `LockError` (or of a driver error). */
function errnoBehind(error: unknown): number | undefined {
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
  const errno = (cause as { errno?: unknown } | null)?.errno;
  return typeof errno === 'number' ? errno : undefined;
}

/** A `Date` as a UTC `DATETIME(6)` literal, for comparing with the tables' UTC columns. */
const utcDatetime = (date: Date): string => date.toISOString().replace('T', ' ').replace('Z', '');

/** `LockAdminStore` on MySQL and MariaDB. @internal */
export class MysqlLockAdminStore extends LockAdminStore {
  /** Where the server keeps its variables as tables: MariaDB's place until a server says it has none there (MySQL 8). */
  private valuesSchema: ServerValuesSchema = 'information_schema';

  constructor(
    private readonly runner: MysqlStatementRunner,
    private readonly dataSource: DataSource,
    /** The names freed (or the permits changed) by this process, for its own waiters. */
    private readonly wakeups?: MysqlWakeups,
  ) {
    super();
  }

  async listGrants(filter: LockGrantFilter = {}): Promise<LockGrant[]> {
    const name = filter.name ?? null;
    const appId = filter.appId ?? null;
    const rows = await this.runner.select<MysqlLogRow & { held_for_ms: string; lease_left_ms: string }>(
      'getGrants',
      Admin.SELECT_GRANTS,
      [name, name, appId, appId],
    );
    return rows.map((row) =>
      toGrant({ ...logRow(row), held_for_ms: Number(row.held_for_ms), lease_left_ms: Number(row.lease_left_ms) }),
    );
  }

  async listLog(query: LockLogQuery & { limit: number }): Promise<LockLogEntry[]> {
    const since = query.since === undefined ? null : utcDatetime(query.since);
    const name = query.name ?? null;
    const stamp = query.stamp ?? null;
    const rows = await this.runner.select<
      MysqlLogRow & {
        status: LockLogStatus;
        business_done: string | null;
        ended: string | null;
        ended_by: string | null;
        end_reason: string | null;
      }
    >('getLog', Admin.SELECT_LOG, [since, since, since, name, name, stamp, stamp, query.limit]);
    return rows.map((row) =>
      toLogEntry({
        ...logRow(row),
        status: row.status,
        business_done: dateOf(row.business_done),
        ended: dateOf(row.ended),
        ended_by: row.ended_by,
        end_reason: row.end_reason,
      }),
    );
  }

  async listWaiters(name?: string): Promise<LockWaiterInfo[]> {
    const rows = await this.runner.select<{
      waiter: string;
      app_id: string;
      lock_name: string;
      mode: string;
      seq: string | number;
      waiting_for_ms: string;
      expires_in_ms: string;
    }>('listWaiters', Admin.SELECT_WAITER_ROWS);
    // One entry per waiter (its rows come in its registration order, names sorted), in waiting order.
    const waiters = new Map<string, { info: LockWaiterInfo; names: string[]; modes: string[] }>();
    for (const row of rows) {
      const entry = waiters.get(row.waiter) ?? {
        info: {
          waiter: row.waiter,
          appId: row.app_id,
          locks: [],
          waitingForMs: Number(row.waiting_for_ms),
          expiresInMs: Number(row.expires_in_ms),
          givesUpAt: waiterDeadline(row.waiter),
          position: 0, // its place among those returned, below
        },
        names: [],
        modes: [],
      };
      entry.names.push(row.lock_name);
      entry.modes.push(row.mode);
      waiters.set(row.waiter, entry);
    }
    return [...waiters.values()]
      .filter((entry) => name === undefined || entry.names.includes(name))
      .map((entry, i) => ({ ...entry.info, locks: locksOf(entry.names, entry.modes), position: i + 1 }));
  }

  async loadPermits(): Promise<LockPermitsEntry[]> {
    const rows = await this.runner.select<{ lock_name: string; mode: string; permits: number | string }>(
      'refreshLockPermits',
      SQL.SELECT_ALL_PERMITS,
    );
    return rows.map((row) => ({ name: row.lock_name, mode: row.mode === 'W' ? 'write' : 'read', permits: Number(row.permits) }));
  }

  async savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void> {
    await this.runner.write(
      'setLockPermits',
      permits === null ? SQL.DELETE_PERMITS : SQL.UPSERT_PERMITS,
      permits === null ? [name, MODE_CODE[mode]] : [name, MODE_CODE[mode], permits, permits],
    );
    // More permits (or none left to obey) may let a waiter in: this process's waiters check again.
    this.wakeups?.freed([name]);
  }

  async forceRelease(stamp: number, actor: string, reason: string): Promise<ForcedGrant | undefined> {
    // `outcomeUnknown` once the COMMIT was sent: a failure before it leaves nothing done (the server rolls back).
    const forced = await this.runner.transaction('forceRelease', true, async (tx) => {
      const [grant] = await tx.select<MysqlLogRow>(Admin.SELECT_LIVE_GRANT, [stamp]);
      if (!grant) return undefined;
      await tx.write(Admin.END_GRANT_FORCED, [actor, reason, stamp]);
      const [held] = await tx.select<{ held_for_ms: string }>(Admin.SELECT_HELD_FOR, [stamp]);
      await tx.write(SQL.DELETE_GRANT_LOCKS, [stamp]);
      await deleteHandedWaiters(tx, [stamp]);
      const names = jsonArray(grant.lock_names);
      return {
        appId: grant.app_id,
        instance: grant.instance,
        locks: locksOf(names, jsonArray(grant.lock_modes)),
        heldForMs: Number(held?.held_for_ms ?? 0),
      };
    });
    if (forced) this.wakeups?.freed(forced.locks.map((lock) => lock.name));
    return forced;
  }

  async listLeaders(role?: string): Promise<LockLeaderInfo[]> {
    const value = role ?? null;
    return toLeaderInfos(await this.runner.select<LeaderRow>('getLeaders', SELECT_LEADERS, [value, value, value, value]));
  }

  /**
   * The Galera node the pool's connection reaches, in one statement (two the first time on MySQL 8, whose variables are
   * in `performance_schema` only: the answer is remembered). Undefined unless the server says `wsrep_on = ON`: a plain
   * MariaDB has the `wsrep_*` values too (a node in no cluster), MySQL has none.
   */
  override async galeraNode(): Promise<LockGaleraNode | undefined> {
    let row: GaleraNodeRow | undefined;
    try {
      [row] = await this.runner.select<GaleraNodeRow>('getGaleraNode', SELECT_GALERA_NODE[this.valuesSchema]);
    } catch (error) {
      const errno = errnoBehind(error);
      if (this.valuesSchema !== 'information_schema' || errno === undefined || !NO_VALUES_TABLE_ERRNOS.has(errno)) throw error;
      this.valuesSchema = 'performance_schema';
      [row] = await this.runner.select<GaleraNodeRow>('getGaleraNode', SELECT_GALERA_NODE[this.valuesSchema]);
    }
    if (row?.wsrep_on?.toUpperCase() !== 'ON') return undefined;
    return {
      nodeName: row.node_name ?? '',
      clusterStatus: row.cluster_status ?? 'Disconnected',
      localState: row.local_state ?? '',
      clusterSize: Number(row.cluster_size ?? 0),
    };
  }

  async schemaRows(): Promise<SchemaRows> {
    const table = (this.dataSource.options as { migrationsTableName?: string }).migrationsTableName ?? 'migrations';
    const [found] = await this.runner.select<{ migrations_table: string | number; lock_tables: string | number }>(
      'getSchemaStatus',
      Admin.SELECT_TABLES_PRESENT,
      [table],
    );
    const tablesPresent = Number(found?.lock_tables) === 4;
    if (Number(found?.migrations_table) === 0) return { recorded: [], tablesPresent };
    const names = await this.runner.select<{ name: string }>(
      'getSchemaStatus',
      Admin.selectMigrationNames(`\`${table.replaceAll('`', '``')}\``),
    );
    return { recorded: names.map((row) => row.name), tablesPresent };
  }
}
