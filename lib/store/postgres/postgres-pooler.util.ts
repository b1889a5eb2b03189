import type { Pool, PoolClient, QueryConfig } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * What the connections of a pool reach: their own server session each (`'session'`: PostgreSQL itself, or a pooler
 * in session mode), server connections shared between transactions (`'transaction'`: PgBouncer in transaction mode,
 * RDS Proxy before it pins), or shared between statements (`'statement'`: no transactions at all).
 * @internal
 */
export type PoolTopology = 'session' | 'transaction' | 'statement';

/** Rounds of the check: one is conclusive on an idle pooler; more make other clients' traffic irrelevant. */
const ROUNDS = 3;

const BACKEND_PID = 'SELECT pg_backend_pid() AS pid';

/**
 * Whether `pool` is behind a transaction pooler, from two of its connections A and B in each round:
 * 1. A reads its backend pid (a pooler hands its server connection back once the statement ends);
 * 2. B opens a transaction and reads its pid (a pooler gives it a server connection for the whole transaction: LIFO
 *    in PgBouncer, the one A has just handed back);
 * 3. A reads its pid again while B's transaction is open, and B commits (sent at once, so that a pooler with a single
 *    server connection does not wait forever).
 *
 * A real session keeps its pid, and two sessions never share one: B seeing A's pid, or A's pid changing, can only be
 * a pooler. A pooler in statement mode refuses B's `BEGIN`.
 * @internal
 */
export async function detectPoolTopology(pool: Pool, timeoutMs: number): Promise<PoolTopology> {
  const a = await pool.connect();
  // A checked-out connection has no listener of the pool: a backend ended during the check (57P01) would emit an
  // 'error' nobody handles, which crashes the process. Kept on a destroyed connection: it may still emit one.
  a.on('error', ignore);
  let b: PoolClient | undefined;
  let broken = false;
  try {
    b = await pool.connect();
    b.on('error', ignore);
    for (let round = 0; round < ROUNDS; round++) {
      const first = await pidOf(a, timeoutMs);
      try {
        await b.query(timed('BEGIN', timeoutMs));
      } catch (error) {
        if (/statement pooling|transaction blocks not allowed/i.test(String((error as Error).message))) {
          broken = true;
          return 'statement';
        }
        throw error;
      }
      const inTransaction = await pidOf(b, timeoutMs);
      const again = pidOf(a, timeoutMs);
      const committed = b.query(timed('COMMIT', timeoutMs));
      const [second] = await Promise.all([again, committed]);
      if (inTransaction === first || second !== first) return 'transaction';
    }
    return 'session';
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    if (!broken) a.off('error', ignore).release();
    else a.release(true);
    if (!broken) b?.off('error', ignore).release();
    else b?.release(true);
  }
}

async function pidOf(client: PoolClient, timeoutMs: number): Promise<number> {
  const result = await client.query<{ pid: number }>(timed(BACKEND_PID, timeoutMs));
  return Number(result.rows[0]?.pid);
}

/** `text` with the client-side timeout of the library's statements. */
function timed(text: string, timeoutMs: number): QueryConfig {
  const query: QueryConfig & { query_timeout: number } = { text, query_timeout: timeoutMs };
  return query;
}

/**
 * What each DataSource's pool was found to reach, shared by every statement runner on it (the instance's store, the
 * admin store): named prepared statements are sent on the pool only once it is known to give real sessions. Until then
 * (and on a transaction pooler) statements go unnamed, which every pooler passes on.
 */
const topologies = new WeakMap<DataSource, PoolTopology>();

/** Records what `dataSource`'s pool reaches. @internal */
export function recordPoolTopology(dataSource: DataSource, topology: PoolTopology): void {
  topologies.set(dataSource, topology);
}

/** True once `dataSource`'s pool is known to give each connection a session of its own. @internal */
export function poolKeepsSessions(dataSource: DataSource): boolean {
  return topologies.get(dataSource) === 'session';
}

/** The listener of a checked-out connection's errors, which its statements report anyway. */
function ignore(): void {}
