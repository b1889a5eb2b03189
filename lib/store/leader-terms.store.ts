/**
 * What an election recorded (`LeaderTermStore.elect`). @internal
 */
export interface LeaderElection {
  /** The role's term: 1 at its first election, one more at each election since (the fencing token). */
  readonly term: number;
  /** When the term began (database clock, epoch ms). */
  readonly electedAt: number;
}

/**
 * The storage port of leader election's terms (`locking_leaders`), one implementation per dialect. @internal
 */
export abstract class LeaderTermStore {
  /**
   * Records that the grant `stamp` (the role's lock, held by `appId`) won `role`, and returns its term: one more than
   * the role's last term. Nothing is recorded (undefined) when the grant is no longer live by the database clock
   * (released, reaped, lease over), when another grant holds the role's lock (a permits row giving it more than one
   * writer), or when a grant with a larger stamp has already won the role: a stale candidate
   * never gets a term, so the terms grow in the order of the grants. Idempotent per stamp: made again under the same
   * stamp, it returns the same term.
   */
  abstract elect(role: string, stamp: number, appId: string, instance: string): Promise<LeaderElection | undefined>;
}
