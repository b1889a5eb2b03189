/** What `SELECT_SESSION_ISOLATION` answers of a session. @internal */
export interface SessionIsolationRow {
  /** The level a statement that names none runs at, as PostgreSQL spells it (`read committed`, `serializable`, …). */
  readonly isolation: string;
  /** Where `default_transaction_isolation` comes from (`pg_settings.source`). */
  readonly source: string;
  /** The session's role and database, quoted as identifiers. */
  readonly role: string;
  readonly database: string;
}

/**
 * What to change, for each place `default_transaction_isolation` may come from (`pg_settings.source`): the
 * connection's options, the role, the database, the role in the database, a `SET` on the session; otherwise the
 * server's own setting.
 */
function fixFor({ source, role, database }: SessionIsolationRow): string {
  switch (source) {
    case 'client':
      return (
        "the lock DataSource's connection options set it: remove default_transaction_isolation from them (`extra.options` " +
        "'-c default_transaction_isolation=…', the URL's `options`, or PGOPTIONS)"
      );
    case 'user':
      return `the role sets it: ALTER ROLE ${role} RESET default_transaction_isolation`;
    case 'database':
      return (
        `the database sets it: ALTER DATABASE ${database} RESET default_transaction_isolation, or for the lock role ` +
        `alone ALTER ROLE ${role} IN DATABASE ${database} SET default_transaction_isolation = 'read committed'`
      );
    case 'database user':
      return `the role sets it in this database: ALTER ROLE ${role} IN DATABASE ${database} RESET default_transaction_isolation`;
    case 'session':
      return (
        'a SET on the session sets it (a connect hook of the pool, or the connect_query of a pooler): remove it, or ' +
        "make it SET default_transaction_isolation = 'read committed'"
      );
    default:
      return (
        `the server sets it (${source}): give the lock role READ COMMITTED with ALTER ROLE ${role} SET ` +
        "default_transaction_isolation = 'read committed', or set it back in postgresql.conf (or ALTER SYSTEM)"
      );
  }
}

/**
 * The problem to report when a session of the lock DataSource does not run READ COMMITTED by default, naming the
 * setting and what to change; undefined when it does. Every grant (`locking_try_acquire`) refuses other levels with
 * LK001, READ UNCOMMITTED included, since its checks need a fresh snapshot per statement.
 * @internal
 */
export function isolationProblem(row: SessionIsolationRow | undefined): string | undefined {
  if (row === undefined || row.isolation === 'read committed') return undefined;
  return (
    `The lock connections run ${row.isolation.toUpperCase()} by default (default_transaction_isolation = ` +
    `'${row.isolation}'), and every grant needs READ COMMITTED: ${fixFor(row)}.`
  );
}
