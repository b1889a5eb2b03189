import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';

/**
 * Runs the hot path's statements on the instance session's connection whenever it is idle, and on the pool
 * otherwise. That connection is kept for the life of the instance anyway (it holds the instance lock) and sits idle
 * between its rare statements; a statement sent on it skips the pool's checkout and check-in, about 10 µs each,
 * 3–4 % of an uncontended acquire + release (README, "Design and performance"). Under load, the second and later
 * statements in flight go to the pool as before.
 * @internal
 */
export class SessionLane {
  private client?: PoolClient;
  private alive: () => boolean = () => false;
  private busy = false;

  /** Sends the lane's statements on `client` from now on, while `alive()` holds. */
  attach(client: PoolClient, alive: () => boolean): void {
    this.client = client;
    this.alive = alive;
  }

  /** Stops using `client` (its session closed or broke); a statement in flight on it ends as it will. */
  detach(client: PoolClient): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.alive = () => false;
  }

  /** Runs `query` on the kept connection if it is idle and alive, else on `pool`. */
  async query<R extends QueryResultRow>(pool: Pool, query: QueryConfig): Promise<QueryResult<R>> {
    const client = this.client;
    if (!client || this.busy || !this.alive()) return pool.query<R>(query);
    this.busy = true;
    try {
      return await client.query<R>(query);
    } finally {
      this.busy = false;
    }
  }
}
