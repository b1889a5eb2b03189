/**
 * The fence of one grant as SQL, for a data layer that sends statements itself (`LockFence.statement`). Send it as
 * the last statement of the business transaction, with `params` bound in order; the grant is fenced when it
 * - PostgreSQL: returns one row (none: the grant is lost);
 * - MySQL/MariaDB: affects one row (0: the grant is lost).
 * When it is lost, roll the transaction back. Once fenced, no other holder can be granted the locks until the
 * transaction ends.
 * @publicApi
 */
export interface LockFenceStatement {
  /** The statement, with `$1`, `$2` (PostgreSQL) or `?` (MySQL/MariaDB) placeholders. */
  readonly sql: string;
  /** The values of the placeholders: the stamp and the module's `appId`. */
  readonly params: readonly [stamp: number, appId: string];
  /** The database it is written for. */
  readonly dialect: 'postgres' | 'mysql';
  /**
   * The same statement with `?` placeholders, each value given as many times as the statement uses it, for layers
   * that take no numbered placeholders (Knex's `raw`). On MySQL/MariaDB: `sql` and `params` themselves.
   */
  readonly positional: {
    /** The statement, its values as `?` placeholders. */
    readonly sql: string;
    /** One value per `?`, in order. */
    readonly params: readonly unknown[];
  };
}

/**
 * A connection inside the business transaction (after `BEGIN`), as `LockFence.fence` takes it: a `pg` `PoolClient`
 * or `Client`, or a `mysql2/promise` `PoolConnection` or `Connection`. Never a pool: its statements may each run on
 * another connection, outside the transaction.
 * @publicApi
 */
export interface LockFenceConnection {
  /** `pg`'s `query(text, values)`, or `mysql2/promise`'s `query(sql, values)`. */
  query(sql: string, values: unknown[]): Promise<unknown>;
}
