/**
 * How a fenced commit ended: committed (with the stamps its caller releases next), or failed (with why).
 * @internal
 */
export type CommitOutcome =
  | { readonly committed: true; readonly releasing: ReadonlySet<number> }
  | { readonly committed: false; readonly failure: string };

/** One grant this process holds (`LockLeases`). @internal */
export interface HeldGrant {
  /**
   * When its lease may end, on this process's monotonic clock: `leaseMs` after its last renewal was sent, and never
   * later than `holdDeadline`.
   */
  deadline: number;
  /**
   * `maxHoldMs` after its acquisition was sent (the renewals never extend its lease past that); no limit (no
   * `maxHoldMs`, or a leader's grant, which it does not bound): Infinity.
   */
  readonly holdDeadline: number;
  /**
   * `deadline` on the wall clock (`Date.now()`): the monotonic clock stops while the machine is suspended, the wall
   * clock does not, and neither does the database's. The grant is lost when either clock says its lease may be over.
   */
  wallDeadline: number;
  /** `holdDeadline` on the wall clock. */
  readonly wallHoldDeadline: number;
  /** A leader's grant, which `maxHoldMs` does not bound: its lease is renewed without a cap. */
  readonly unbounded: boolean;
  /** Made when somebody first asks for the grant's signal: most grants never need one. */
  controller: AbortController | null;
  /** Its release is in flight: a renewal that no longer finds it saw the release, not a loss. */
  releasing: boolean;
  /**
   * How many fenced commits relying on it are in flight (business done sent, the COMMIT's outcome not known yet): the
   * row that business done locked holds off every end of the grant, so its lease expiry waits for the outcome.
   */
  committing: number;
  /** A fenced transaction that relied on it committed, and its release follows: it is never declared lost any more. */
  committed: boolean;
  /** Why it was found lost while a fenced commit was in flight: told once the commit's outcome is known. */
  pendingLoss?: string;
}

/** Whether a grant's lease expiry waits for a fenced commit: one in flight, or one that committed (released next). @internal */
export function awaitsCommit(grant: HeldGrant): boolean {
  return grant.committing > 0 || grant.committed;
}

/** Whether a grant's lease may be over: by the monotonic clock, or by the wall clock (a suspend stops only the first). @internal */
export function isOver(grant: HeldGrant, now: number, wallNow: number): boolean {
  return grant.deadline <= now || grant.wallDeadline <= wallNow;
}
