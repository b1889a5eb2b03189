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
 *
 * The connection has an `'error'` listener of the library from the moment the pool hands it over until it is
 * released (see `connectGuarded`); one that broke before the caller could have it is destroyed, and the checkout
 * fails with its error (nothing was sent on it).
 * @internal
 */
export function checkoutPgClient(pool: Pool, ms: number): Promise<PoolClient> {
  // An idle connection and nobody ahead: it is handed over on the next tick.
  if (pool.idleCount > 0 && pool.waitingCount === 0) return connectGuarded(pool);
  const internals = pool as unknown as PgPoolInternals;
  const clientsBefore = internals._clients?.length ?? 0;
  const queuedBefore = internals._pendingQueue?.length ?? 0;
  const connection = connectGuarded(pool);
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

/**
 * `pool.connect()`, with an `'error'` listener put on the connection in the pool's callback, in the same turn as the
 * handover, and taken off by its `release`. `pg-pool` removes its own listener when it hands a connection over, and
 * a connection it has just opened is handed over from inside its socket's data callback: the same chunk may carry
 * the server's termination of the backend (57P01 right after start-up), emitted as `'error'` before any code that
 * awaits the checkout runs. Without a listener then, the process crashes.
 */
function connectGuarded(pool: Pool): Promise<PoolClient> {
  return new Promise<{ client: PoolClient; failure: () => unknown }>((resolve, reject) => {
    pool.connect((error, client, done: (release?: Error | boolean) => void) => {
      if (error || !client) return reject(error ?? new Error('pg-pool handed over no connection'));
      let failure: unknown;
      const onError = (lost: unknown) => void (failure ??= lost);
      client.on('error', onError);
      client.release = (release?: Error | boolean) => {
        client.off('error', onError);
        done(release); // pg-pool puts its own listener back first
      };
      resolve({ client, failure: () => failure });
    });
  }).then(({ client, failure }) => {
    // Runs once the callback that handed it over is done: a connection that broke meanwhile is not lent.
    const lost = failure();
    if (lost === undefined) return client;
    client.release(true);
    throw lost;
  });
}

/** The last item of `list` when it grew past `before`. */
function lastAdded(list: readonly unknown[] | undefined, before: number): unknown {
  return list && list.length > before ? list[list.length - 1] : undefined;
}
