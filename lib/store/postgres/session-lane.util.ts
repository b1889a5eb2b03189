import type { PoolClient } from 'pg';

/**
 * Lends the instance session's connection to the hot path whenever it is idle. That connection is kept for the life
 * of the instance anyway (it holds the instance lock) and sits idle between its rare statements; a statement sent on
 * it skips the pool's checkout and check-in, about 10 µs each, 3–4 % of an uncontended acquire + release
 * (docs/design.md). Under load, the second and later statements in flight go to the pool as before.
 * @internal
 */
export class SessionLane {
  private client?: PoolClient;
  private alive: () => boolean = () => false;
  private broken: () => void = () => undefined;
  /** The connection while a statement runs on it. */
  private busy?: PoolClient;

  /**
   * Lends `client` from now on, while `alive()` holds; `broken()` is called when a statement on it fails with a
   * connection failure (the session must then be closed: a timed-out statement may still be running on it).
   */
  attach(client: PoolClient, alive: () => boolean, broken: () => void): void {
    this.client = client;
    this.alive = alive;
    this.broken = broken;
  }

  /** Stops lending `client` (its session closed or broke); a statement in flight on it ends as it will. */
  detach(client: PoolClient): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.alive = () => false;
    this.broken = () => undefined;
  }

  /** The kept connection if it is idle and alive (it is then busy until `giveBack`), else undefined. */
  borrow(): PoolClient | undefined {
    const client = this.client;
    if (!client || this.busy === client || !this.alive()) return undefined;
    this.busy = client;
    return client;
  }

  /** Ends a `borrow`; `connectionFailed` reports that the statement failed with the connection. */
  giveBack(client: PoolClient, connectionFailed: boolean): void {
    if (this.busy === client) this.busy = undefined;
    if (connectionFailed && this.client === client) this.broken();
  }
}
