import type { Pool, PoolClient } from 'pg';
import { checkoutWithin } from '../pool-checkout.util.js';

/** What `pg-pool` keeps of the requests under way (undocumented: each read is guarded). */
interface PgPoolInternals {
  readonly _clients?: unknown[];
  readonly _pendingQueue?: unknown[];
}

/** A `pg` client being opened: its socket, and whether its start-up is over. */
interface OpeningClient {
  readonly _connected?: boolean;
  readonly connection?: { readonly stream?: { destroy(): void } };
}

/**
 * A connection of `pool` within `ms` (see `checkoutWithin`), whatever the pool's `connectionTimeoutMillis` (`pg`'s
 * default, 0, waits without limit). Taken back on timeout the way `pg-pool`'s own timeout does it: a request queued
 * behind a full pool leaves the queue, a connection being opened for it has its socket destroyed (a socket frozen
 * mid start-up would otherwise keep `pool.end()`, and the process, waiting for good).
 * @internal
 */
export function checkoutPgClient(pool: Pool, ms: number): Promise<PoolClient> {
  // An idle connection and nobody ahead: it is handed over on the next tick.
  if (pool.idleCount > 0 && pool.waitingCount === 0) return pool.connect();
  const internals = pool as unknown as PgPoolInternals;
  const clientsBefore = internals._clients?.length ?? 0;
  const queuedBefore = internals._pendingQueue?.length ?? 0;
  const connection = pool.connect();
  // `connect` opens a client for the request (pushed on `_clients`) or queues it (on `_pendingQueue`), synchronously.
  const opening = lastAdded(internals._clients, clientsBefore) as OpeningClient | undefined;
  const queued = lastAdded(internals._pendingQueue, queuedBefore);
  const abandon = () => {
    const queue = internals._pendingQueue;
    const at = queued === undefined || !queue ? -1 : queue.indexOf(queued);
    if (at >= 0) queue!.splice(at, 1);
    if (opening && !opening._connected) opening.connection?.stream?.destroy();
  };
  return checkoutWithin({ connection, abandon }, ms, (client) => client.release());
}

/** The last item of `list` when it grew past `before`. */
function lastAdded(list: readonly unknown[] | undefined, before: number): unknown {
  return list && list.length > before ? list[list.length - 1] : undefined;
}
