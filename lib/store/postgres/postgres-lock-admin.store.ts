import type { DataSource } from 'typeorm';
import type {
  LockGrant,
  LockGrantFilter,
  LockLeaderInfo,
  LockLogEntry,
  LockLogQuery,
  LockPermitsEntry,
  LockWaiterInfo,
} from '../../interfaces/index.js';
import { LockAdminStore, type ForcedGrant, type SchemaRows } from '../lock-admin.store.js';
import * as Admin from './postgres-lock-admin.queries.sql.js';
import { SELECT_LEADERS } from './postgres-leader.queries.sql.js';
import { type LeaderRow, toLeaderInfos } from '../leader-rows.util.js';
import { MODE_CODE } from '../lock-sql.constants.js';
import * as SQL from './postgres-lock.queries.sql.js';
import { locksOf, toGrant, toLogEntry, waiterDeadline, type GrantRow, type LogEntryRow } from '../lock-rows.util.js';
import type { PostgresStatementRunner } from './postgres-statement.runner.js';

/** `LockAdminStore` on PostgreSQL. @internal */
export class PostgresLockAdminStore extends LockAdminStore {
  constructor(
    private readonly runner: PostgresStatementRunner,
    private readonly dataSource: DataSource,
  ) {
    super();
  }

  async listGrants(filter: LockGrantFilter = {}): Promise<LockGrant[]> {
    const result = await this.runner.run<GrantRow>('getGrants', false, {
      text: SQL.SELECT_GRANTS,
      values: [filter.name ?? null, filter.appId ?? null],
    });
    return result.rows.map(toGrant);
  }

  async listLog(query: LockLogQuery & { limit: number }): Promise<LockLogEntry[]> {
    const result = await this.runner.run<LogEntryRow>('getLog', false, {
      text: SQL.SELECT_LOG,
      values: [query.limit, query.since ?? null, query.name ?? null, query.stamp ?? null],
    });
    return result.rows.map(toLogEntry);
  }

  async listWaiters(name?: string): Promise<LockWaiterInfo[]> {
    const result = await this.runner.run<{
      waiter: string;
      app_id: string;
      lock_names: string[];
      lock_modes: string[];
      position: string;
      waiting_for_ms: number;
      expires_in_ms: number;
    }>('listWaiters', false, { text: Admin.SELECT_WAITERS, values: [name ?? null] });
    return result.rows.map((row) => ({
      waiter: row.waiter,
      appId: row.app_id,
      locks: locksOf(row.lock_names, row.lock_modes),
      waitingForMs: row.waiting_for_ms,
      expiresInMs: row.expires_in_ms,
      givesUpAt: waiterDeadline(row.waiter),
      position: Number(row.position),
    }));
  }

  async loadPermits(): Promise<LockPermitsEntry[]> {
    const result = await this.runner.run<{ lock_name: string; mode: string; permits: number }>(
      'refreshLockPermits',
      false,
      { text: SQL.SELECT_ALL_PERMITS },
    );
    return result.rows.map((row) => ({
      name: row.lock_name,
      mode: row.mode === 'W' ? 'write' : 'read',
      permits: row.permits,
    }));
  }

  async savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void> {
    await this.runner.run('setLockPermits', false, {
      text: permits === null ? SQL.DELETE_PERMITS : SQL.UPSERT_PERMITS,
      values: permits === null ? [name, MODE_CODE[mode]] : [name, MODE_CODE[mode], permits],
    });
  }

  async forceRelease(stamp: number, actor: string, reason: string): Promise<ForcedGrant | undefined> {
    // A statement that timed out on the client may still be waiting on the server (behind a business transaction
    // holding the grant's rows) and commit after it: `outcomeUnknown`.
    const result = await this.runner.run<{
      app_id: string;
      instance: string;
      lock_names: string[];
      lock_modes: string[];
      held_for_ms: number;
    }>('forceRelease', true, { text: Admin.FORCE_RELEASE, values: [stamp, actor, reason] });
    const row = result.rows[0];
    return row
      ? { appId: row.app_id, instance: row.instance, locks: locksOf(row.lock_names, row.lock_modes), heldForMs: row.held_for_ms }
      : undefined;
  }

  async listLeaders(role?: string): Promise<LockLeaderInfo[]> {
    const result = await this.runner.run<LeaderRow>('getLeaders', false, { text: SELECT_LEADERS, values: [role ?? null] });
    return toLeaderInfos(result.rows);
  }

  async schemaRows(): Promise<SchemaRows> {
    const table = this.migrationsTable();
    const found = await this.runner.run<{ migrations_table: boolean; lock_tables: boolean }>('getSchemaStatus', false, {
      text: Admin.SELECT_TABLES_PRESENT,
      values: [table],
    });
    const { migrations_table: hasTable = false, lock_tables: tablesPresent = false } = found.rows[0] ?? {};
    if (!hasTable) return { recorded: [], tablesPresent };
    const names = await this.runner.run<{ name: string }>('getSchemaStatus', false, {
      text: Admin.selectMigrationNames(table),
    });
    return { recorded: names.rows.map((row) => row.name), tablesPresent };
  }

  /** TypeORM's migrations table of the DataSource, quoted (with its schema when the DataSource names one). */
  private migrationsTable(): string {
    const options = this.dataSource.options as { migrationsTableName?: string; schema?: string };
    const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;
    const table = quote(options.migrationsTableName ?? 'migrations');
    return options.schema ? `${quote(options.schema)}.${table}` : table;
  }
}
