import type {
  LockGaleraNode,
  LockGrant,
  LockGrantFilter,
  LockLeaderInfo,
  LockLogEntry,
  LockLogQuery,
  LockPermitsEntry,
  LockRequest,
  LockWaiterInfo,
} from '../interfaces/index.js';

/** A grant freed by force, as the store reports it. @internal */
export interface ForcedGrant {
  readonly appId: string;
  readonly instance: string;
  readonly locks: LockRequest[];
  readonly heldForMs: number;
}

/** What the migrations table and the catalog say of the lock schema. @internal */
export interface SchemaRows {
  /** Names recorded in the migrations table, in order (empty when the table does not exist). */
  readonly recorded: string[];
  readonly tablesPresent: boolean;
}

/**
 * The storage port of the statements that read or change every app's rows, bound to no `appId`: reports (grants,
 * waiters, log, permits), permits changes, forced release and the schema's status. Each dialect's `LockStore` uses
 * its implementation for its reports, and `LockAdminService` for everything.
 * @internal
 */
export abstract class LockAdminStore {
  /** The live grants of every app (narrowed by `filter`), oldest first. */
  abstract listGrants(filter?: LockGrantFilter): Promise<LockGrant[]>;
  /** The newest log rows that match `query`. */
  abstract listLog(query: LockLogQuery & { limit: number }): Promise<LockLogEntry[]>;
  /** The registered waiters (of `name`, when given), in waiting order. */
  abstract listWaiters(name?: string): Promise<LockWaiterInfo[]>;
  /** Every permits row. */
  abstract loadPermits(): Promise<LockPermitsEntry[]>;
  /** Writes (or, with `null`, deletes) one permits row. */
  abstract savePermits(name: string, mode: 'read' | 'write', permits: number | null): Promise<void>;
  /** Frees the live grant `stamp` of any app, recording `actor` and `reason`; undefined when none is live. */
  abstract forceRelease(stamp: number, actor: string, reason: string): Promise<ForcedGrant | undefined>;
  /** Every role of leader election (or `role` only): its leader now, its latest term and its candidates in order. */
  abstract listLeaders(role?: string): Promise<LockLeaderInfo[]>;
  /** The migrations recorded in the DataSource's migrations table, and whether the lock tables exist. */
  abstract schemaRows(): Promise<SchemaRows>;

  /**
   * The Galera node the pool reaches (MySQL and MariaDB with `wsrep_on = ON`); undefined for any other server. Read
   * with a statement that a node outside the primary component still answers.
   */
  galeraNode(): Promise<LockGaleraNode | undefined> {
    return Promise.resolve(undefined);
  }
}
