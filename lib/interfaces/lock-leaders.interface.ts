/**
 * The replica that leads a role now, as the database records it (`LockAdminService.getLeaders`): the winner of the
 * role's latest term while that term's grant is live (it holds the role's lock and its lease is not over by the
 * database's clock).
 * @publicApi
 */
export interface LockRoleLeader {
  /** The `appId` of the instance that leads. */
  readonly appId: string;
  /** The process that leads (its `instance` option). */
  readonly instance: string;
  /** The term's fencing token (`LeaderTerm.token` on the leader). */
  readonly term: number;
  /** When the term began (database clock). */
  readonly since: Date;
  /** The stamp of the grant of the role's lock (`leader:<role>`) that won the term. */
  readonly stamp: number;
  /** Milliseconds left of the grant's lease (database clock); the leader renews it while it leads. */
  readonly leaseLeftMs: number;
}

/**
 * A replica waiting to lead a role (a candidate waiting for the role's lock), as `LockAdminService.getLeaders` reports
 * it.
 * @publicApi
 */
export interface LockRoleCandidate {
  /** Its place in the queue: 1 is elected next. */
  readonly position: number;
  /** The `appId` of the instance that waits. */
  readonly appId: string;
  /** Milliseconds since it registered as a waiter (database clock). */
  readonly waitingForMs: number;
  /** Its waiter id (as `LockAdminService.listWaiters` shows it). */
  readonly waiter: string;
}

/**
 * One role of leader election across the fleet, as `LockAdminService.getLeaders` reads it from the database: who leads
 * it, in which term, and who waits to lead it next.
 * @publicApi
 */
export interface LockLeaderInfo {
  /** The role (its lock is `leader:<role>`). */
  readonly role: string;
  /**
   * The replica that leads now; null when none does: the last leader's term ended (resigned, shut down, crashed, lost
   * its lease) and no candidate has been elected yet, or the role was never won.
   */
  readonly leader: LockRoleLeader | null;
  /**
   * The role's latest term (fencing token): the leader's when one leads, else the last leader's; 0 when the role was
   * never won. The next election makes it larger.
   */
  readonly term: number;
  /** The candidates waiting for the role, in the order they will be elected. */
  readonly candidates: readonly LockRoleCandidate[];
}

/**
 * Which roles `LockAdminService.getLeaders` returns.
 * @publicApi
 */
export interface LockLeaderFilter {
  /** Only this role. */
  readonly role?: string;
}
