import type { LockMode, LockRequest } from './lock-spec.interface.js';
import type { LockTablesOptions } from './lock-tables-options.interface.js';

/**
 * Options of `LockAdminService.create`.
 * @publicApi
 */
export interface LockAdminOptions extends LockTablesOptions {
  /**
   * Who acts, recorded in the log of every forced release (`endedBy`), 1–200 characters: a person or a tool.
   * @default `${hostname}:${pid}`
   */
  readonly actor?: string;
  /**
   * Longest time one statement may take on the client (from 100 ms): past it, the call fails with `LockStoreError`.
   * @default 10000
   */
  readonly queryTimeoutMs?: number;
}

/**
 * A grant freed by `LockAdminService.forceRelease`.
 * @publicApi
 */
export interface ForcedRelease {
  /** The grant's stamp. */
  readonly stamp: number;
  /** The `appId` of the instance that held it. */
  readonly appId: string;
  /** The process that held it (its `instance` option). */
  readonly instance: string;
  /** The locks it held. */
  readonly locks: readonly LockRequest[];
  /** How long it had been held when it was freed (database clock). */
  readonly heldForMs: number;
  /** Who freed it (the admin's `actor`), as recorded in the log. */
  readonly forcedBy: string;
  /** Why, as recorded in the log. */
  readonly reason: string;
}

/**
 * A caller waiting for a group (`tryLocks` with `waitMs`), as `LockAdminService.listWaiters` reports it.
 * @publicApi
 */
export interface LockWaiterInfo {
  /** The waiter's id (one per waiting call). */
  readonly waiter: string;
  /** The `appId` of the instance that waits. */
  readonly appId: string;
  /** The locks it waits for. */
  readonly locks: readonly LockRequest[];
  /** Milliseconds since it registered (database clock). */
  readonly waitingForMs: number;
  /**
   * Milliseconds until its registration row expires unless the waiter refreshes it (a heartbeat: it does while it
   * waits, so the row of a waiter that died goes away). Not when the wait gives up: see `givesUpAt`.
   */
  readonly expiresInMs: number;
  /**
   * When the wait gives up (`Date.now() + waitMs` when it began, by the waiting instance's clock); null for a waiter
   * of an older version of the library.
   */
  readonly givesUpAt: Date | null;
  /**
   * Its place among the waiters reported, in waiting order: 1 waits longest (readers yield only to writers before
   * them).
   */
  readonly position: number;
}

/**
 * Which grants `getGrants` returns; every field narrows the list.
 * @publicApi
 */
export interface LockGrantFilter {
  /** Only grants holding this lock name (in either mode). */
  readonly name?: string;
  /** Only grants of this `appId`. */
  readonly appId?: string;
}

/**
 * Which log rows `LockAdminService.getLog` returns, newest first.
 * @publicApi
 */
export interface LockLogQuery {
  /**
   * Most rows returned, 1–10000.
   * @default 50
   */
  readonly limit?: number;
  /** Only rows of grants acquired or ended at or after this moment. */
  readonly since?: Date;
  /** Only rows of grants that held this lock name. */
  readonly name?: string;
  /** Only the row of this stamp. */
  readonly stamp?: number;
}

/**
 * One row of the permits table.
 * @publicApi
 */
export interface LockPermitsEntry {
  /** The lock name. */
  readonly name: string;
  /** The mode the permits apply to. */
  readonly mode: LockMode;
  /** How many holders of that mode the name admits at once. */
  readonly permits: number;
}

/**
 * The lock migrations of a database, as `LockAdminService.getSchemaStatus` reads them from TypeORM's migrations table.
 * @publicApi
 */
export interface LockSchemaStatus {
  /** Names of the lock migrations recorded as run, in order. */
  readonly applied: string[];
  /** Names of the migrations of this library version (`LOCK_MIGRATIONS`) not recorded as run. */
  readonly pending: string[];
  /** Whether the lock tables exist (they may, with no migration recorded, when created another way). */
  readonly tablesPresent: boolean;
}
