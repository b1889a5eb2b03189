/**
 * A pool connection had within a bound, on either dialect: a pool kept busy, or a server that does not answer (a
 * frozen network, where `pg` waits without limit by default), never holds a statement, a wait or `app.close()`.
 * @internal
 */

/**
 * The failure of a checkout that did not get a connection in time. Nothing was sent; the drivers' classifiers see a
 * connection failure (a code that is neither a SQLSTATE nor a server errno), so it maps to a transient
 * `LockStoreError` of a known outcome.
 * @internal
 */
export class PoolCheckoutTimeoutError extends Error {
  /** Node's code of a timed-out connection. */
  readonly code = 'ETIMEDOUT';

  constructor(ms: number) {
    super(`no connection of the pool within ${ms} ms (queryTimeoutMs): the pool is busy or the server does not answer`);
    this.name = 'PoolCheckoutTimeoutError';
  }
}

/** A checkout asked of a pool, and how to take the request back. @internal */
export interface PoolCheckout<C> {
  /** Settles with the connection, or the pool's error. */
  readonly connection: Promise<C>;
  /**
   * Takes the request back from the pool (out of its queue, or the connection being opened for it destroyed), so
   * that nothing of it stays behind to hold a slot or keep the pool from ending.
   */
  readonly abandon: () => void;
}

/**
 * The connection of `checkout`, or a `PoolCheckoutTimeoutError` once `ms` have passed: the request is then abandoned,
 * and a connection that comes all the same (it was being handed over) is given back at once through `giveBack`.
 * @internal
 */
export function checkoutWithin<C>(checkout: PoolCheckout<C>, ms: number, giveBack: (connection: C) => void): Promise<C> {
  return new Promise<C>((resolve, reject) => {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      checkout.abandon();
      checkout.connection.then(giveBack, () => undefined);
      reject(new PoolCheckoutTimeoutError(ms));
    }, ms);
    checkout.connection.then(
      (connection) => {
        if (late) return;
        clearTimeout(timer);
        resolve(connection);
      },
      (error: unknown) => {
        if (late) return;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
