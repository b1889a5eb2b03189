import type { Pool, PoolClient, PoolConfig, QueryConfig } from 'pg';
import type { DataSource } from 'typeorm';
import type { ResolvedLockOptions } from '../../utils/resolve-lock-options.util.js';
import { toLockError } from './pg-error.util.js';
import { checkoutPgClient } from './postgres-checkout.util.js';
import { detectPoolTopology, recordPoolTopology, type PoolTopology } from './postgres-pooler.util.js';
import type { PostgresStatementRunner } from './postgres-statement.runner.js';

/** Connections of the direct pool: the two kept sessions, and room for one taken again while the old one closes. */
const DIRECT_POOL_SIZE = 4;

/** Where the server and database a pool reaches are told apart (the same through a pooler as directly). */
const SERVER_IDENTITY = `SELECT current_database() AS db, pg_postmaster_start_time()::text AS started,
  current_setting('port') AS port`;

/** The `pg` module as TypeORM loaded it (the library does not import `pg` itself: it is an optional peer). */
type PgModule = { Pool: new (config: PoolConfig) => Pool };

/**
 * Where the connections of the sessions that outlive one statement come from (the app id's instance lock, `LISTEN`):
 * the DataSource's pool, or the pool of `directUrl`. Its start-up check finds what the DataSource's pool reaches (a
 * transaction pooler or real sessions, recorded for the statement runners) and refuses a configuration that would put
 * a session on a shared server connection.
 * @internal
 */
export class PostgresSessionSource {
  private direct?: Pool;
  private checked?: Promise<string[]>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: ResolvedLockOptions,
    private readonly runner: PostgresStatementRunner,
  ) {}

  /**
   * What keeps the sessions from being real ones, each naming what to change; empty when nothing. Found once (a
   * failure to reach the database is thrown, and checked again next time).
   * @param connectWithinMs how long each connection the check opens may take; `queryTimeoutMs` when longer or not
   *   given (a server that accepts connections and never answers ends start-up within its budget).
   */
  check(connectWithinMs?: number): Promise<string[]> {
    const ms = Math.min(connectWithinMs ?? Infinity, this.options.queryTimeoutMs);
    this.checked ??= this.findProblems(ms).catch((error: unknown) => {
      this.checked = undefined;
      throw toLockError(error, 'checkServer', false);
    });
    return this.checked;
  }

  /** A connection of its own for a kept session: from `directUrl` when given, else out of the DataSource's pool. */
  async connect(operation: string): Promise<PoolClient> {
    if (!this.options.directUrl) return this.runner.connect(operation);
    try {
      return await checkoutPgClient(this.directPool(), this.options.queryTimeoutMs);
    } catch (error) {
      throw toLockError(error, operation, false);
    }
  }

  /** The check, each connection it opens (and each statement) bounded by `ms`. */
  private async findProblems(ms: number): Promise<string[]> {
    const pool = this.runner.pool();
    const max = (pool.options as { max?: number }).max ?? 10;
    const declared = this.options.pooler;
    if (!this.options.directUrl) this.runner.assertRoomForSessions();
    else if (declared !== 'transaction' && max < 2) {
      return [`The lock DataSource's pool allows ${max} connection: raise \`extra.max\` (or poolSize) to at least 2`];
    }
    const found: PoolTopology = declared === 'transaction' ? 'transaction' : await detectPoolTopology(pool, ms);
    if (found === 'statement') {
      return [
        'The lock DataSource connects through a pooler in statement mode, which refuses transactions: use ' +
          '`pool_mode = transaction` (with LockModule option directUrl) or `session` (docs/poolers.md)',
      ];
    }
    if (declared === 'session' && found === 'transaction') {
      return [
        "LockModule option pooler is 'session', but the lock DataSource's connections were seen sharing server " +
          "connections between transactions (a pooler in transaction mode): remove pooler: 'session' and set " +
          'LockModule option directUrl to a connection string that reaches PostgreSQL directly (docs/poolers.md)',
      ];
    }
    // A pooler declared in session mode gives each connection its server session: named statements stay on the pool.
    const topology: PoolTopology = declared === 'session' ? 'session' : found;
    recordPoolTopology(this.dataSource, topology);
    if (!this.options.directUrl) return topology === 'session' ? [] : [noSessionProblem(topology)];
    const direct = this.directPool();
    const reached = await detectPoolTopology(direct, ms);
    if (reached !== 'session') {
      return [
        `LockModule option directUrl reaches ${reached === 'pooler' ? 'a pooler' : `a pooler in ${reached} mode`}, ` +
          'not a PostgreSQL session of its own (its connections do not run in the backend the server announced at ' +
          'their start-up): it must reach PostgreSQL directly, or through a TCP proxy (docs/poolers.md)',
      ];
    }
    const [viaPool, viaDirect] = await Promise.all([identityOf(pool, ms), identityOf(direct, ms)]);
    if (viaPool !== viaDirect) {
      return [
        `LockModule option directUrl reaches another server or database (${viaDirect}) than the lock DataSource ` +
          `(${viaPool}): point it at the same database, directly`,
      ];
    }
    return [];
  }

  /** The pool of `directUrl`: what the URL does not state (user, password, database, TLS) is the DataSource's. */
  private directPool(): Pool {
    if (this.direct) return this.direct;
    const pg = (this.dataSource.driver as unknown as { postgres: PgModule }).postgres;
    const base = this.runner.pool().options as PoolConfig;
    const fromBaseUrl = base.connectionString ? new URL(base.connectionString) : undefined;
    const url = new URL(this.options.directUrl!);
    const user = base.user ?? decodeURIComponent(fromBaseUrl?.username ?? '');
    const password = typeof base.password === 'string' ? base.password : decodeURIComponent(fromBaseUrl?.password ?? '');
    const database = base.database ?? decodeURIComponent(fromBaseUrl?.pathname.slice(1) ?? '');
    if (!url.username && user) url.username = encodeURIComponent(user);
    if (!url.password && password) url.password = encodeURIComponent(password);
    if (url.pathname.length <= 1 && database) url.pathname = `/${encodeURIComponent(database)}`;
    const statesTls = url.searchParams.has('sslmode') || url.searchParams.has('ssl');
    const config: PoolConfig = {
      connectionString: url.toString(),
      // Named as the library's other connections in pg_stat_activity (an application_name in the URL wins).
      application_name: `nestjs-db-locks ${this.options.appId} ${this.options.instance}`.slice(0, 63),
      max: DIRECT_POOL_SIZE,
      // Its sessions are checked out for their whole life and destroyed at their end; the connections the start-up
      // check gives back close at once instead of idling (and keeping the process alive) with no session on them.
      idleTimeoutMillis: 1,
      allowExitOnIdle: true,
      connectionTimeoutMillis: base.connectionTimeoutMillis,
      keepAlive: base.keepAlive,
      ...(!statesTls && base.ssl !== undefined ? { ssl: base.ssl } : {}),
    };
    const direct = new pg.Pool(config);
    // Its connections are checked out for their whole life; one the server ends reports through its session.
    direct.on('error', () => undefined);
    this.direct = direct;
    return direct;
  }
}

/** Why a DataSource whose connections are not proven sessions needs `directUrl` (or a declaration). */
function noSessionProblem(topology: PoolTopology): string {
  const needs =
    'The app id lock that refuses twins and the LISTEN that wakes waiters need sessions of their own: set LockModule ' +
    'option directUrl to a connection string that reaches PostgreSQL directly';
  if (topology === 'transaction') {
    return (
      'The lock DataSource connects through a transaction pooler (LockModule option pooler, or its connections seen ' +
      `sharing server connections between transactions). ${needs} (docs/poolers.md)`
    );
  }
  return (
    'The lock DataSource connects through a pooler (its connections do not run in the backend announced at their ' +
    'start-up: PgBouncer, RDS Proxy, pgcat, Supavisor, Odyssey; or a driver that keeps no BackendKeyData, such as ' +
    'pg-native), and no observation proves that it does not share server connections between transactions. ' +
    `${needs}; or, if it runs in session mode (PgBouncer \`pool_mode = session\`), declare it with LockModule option ` +
    "pooler: 'session' (docs/poolers.md)"
  );
}

/**
 * The database and server `pool` reaches, as one string (no secrets), on a connection had within `ms` (`pool.query`
 * would wait for one without limit) and asked within `ms`.
 */
async function identityOf(pool: Pool, ms: number): Promise<string> {
  const client = await checkoutPgClient(pool, ms);
  const query: QueryConfig & { query_timeout: number } = { text: SERVER_IDENTITY, query_timeout: ms };
  let broken = false;
  try {
    const row = (await client.query<{ db: string; started: string; port: string }>(query)).rows[0];
    return `database "${row?.db}" on the server started ${row?.started}, port ${row?.port}`;
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    client.release(broken);
  }
}
