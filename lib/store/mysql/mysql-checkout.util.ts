import type { Pool, PoolConnection } from 'mysql2';
import { checkoutWithin } from '../pool-checkout.util.js';

/** What `mysql2`'s pool keeps of its connections (undocumented: each read is guarded). */
interface MysqlPoolInternals {
  readonly _freeConnections?: { readonly length: number };
  readonly _allConnections?: { readonly length: number; peekBack?(): unknown };
}

/** A `mysql2` connection being opened: whether its handshake is over, and how to end it. */
interface OpeningConnection {
  readonly authorized?: boolean;
  destroy?(): void;
}

/**
 * A connection of `pool` within `ms` (see `checkoutWithin`), rather than after each connection's `connectTimeout`
 * (10 s by default) or behind a full pool without limit. On timeout a connection being opened for the request is
 * destroyed (it leaves the pool); a request queued behind a full pool stays queued, and the connection it gets later
 * is released at once.
 * @internal
 */
export function checkoutMysqlConnection(pool: Pool, ms: number): Promise<PoolConnection> {
  const internals = pool as unknown as MysqlPoolInternals;
  // A free connection is handed over on the next tick.
  const free = (internals._freeConnections?.length ?? 0) > 0;
  const all = internals._allConnections;
  const before = all?.length ?? 0;
  const connection = new Promise<PoolConnection>((resolve, reject) =>
    pool.getConnection((error, c) => (error ? reject(error) : resolve(c))),
  );
  if (free) return connection;
  // `getConnection` pushes the connection it opens for the request on `_allConnections`, synchronously.
  const opening = all && all.length > before ? (all.peekBack?.() as OpeningConnection | undefined) : undefined;
  const abandon = () => {
    if (opening && !opening.authorized) opening.destroy?.();
  };
  return checkoutWithin({ connection, abandon }, ms, (c) => c.release());
}

/** What `discardMysqlConnection` uses of a `mysql2` pool connection (undocumented: each read is guarded). */
interface DiscardedConnection {
  destroy(): void;
  readonly _pool?: { readonly _closed?: boolean } | null;
  readonly stream?: { destroy(error?: Error): void };
}

/**
 * Destroys a pool connection the library gives up on (broken, or a statement timed out on it). `destroy()` takes it
 * out of an open pool. Once the pool is closing (`pool.end()`, as TypeORM's `DataSource.destroy()` does at shutdown)
 * the connection stays among those `end()` waits for, with `end()`'s QUIT queued behind the statement given up on;
 * and `destroy()` tells the driver that the connection is closing, so that when the socket closes (at once through a
 * proxy that ends both sides, or when the server gives up a lock wait) nothing fails that QUIT: `end()`, and with it
 * `app.close()`, would never return. There the socket is destroyed with an error too, which fails what is queued on
 * the connection, the QUIT included: the pool's `end()` returns (with that error, which TypeORM's module logs).
 * @internal
 */
export function discardMysqlConnection(connection: PoolConnection): void {
  const internals = connection as unknown as DiscardedConnection;
  const closing = internals._pool?._closed === true;
  connection.destroy();
  if (closing) {
    internals.stream?.destroy(
      Object.assign(new Error('the lock library gave up this connection while its pool was closing'), { code: 'PROTOCOL_CONNECTION_LOST' }),
    );
  }
}
