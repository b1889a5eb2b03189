import type { Pool, PoolClient, QueryConfig } from 'pg';
import type { DataSource } from 'typeorm';
import { checkoutPgClient } from './postgres-checkout.util.js';

/**
 * What the connections of a pool were found to reach:
 * - `'session'`: a server session each, proven: PostgreSQL itself (or a TCP proxy such as HAProxy);
 * - `'pooler'`: a pooler (PgBouncer, RDS Proxy, pgcat, Supavisor, Odyssey), seen to share nothing during the check;
 *   whether its server connections are shared between transactions cannot be proven by observation;
 * - `'transaction'`: a pooler seen sharing its server connections between transactions;
 * - `'statement'`: a pooler in statement mode (no transactions at all).
 * @internal
 */
export type PoolTopology = 'session' | 'pooler' | 'transaction' | 'statement';

/** Rounds of the check: each one more chance to see a pooler share its server connections. */
const ROUNDS = 3;

const BACKEND_PID = 'SELECT pg_backend_pid() AS pid';

/**
 * What `pool` reaches, from two of its connections A and B. A connection is proven a session of its own when every
 * statement on it runs in the backend whose pid the server announced at the connection's start-up (its
 * `BackendKeyData`, kept by node-postgres as `processID`): PostgreSQL gives its own pid, and so does a TCP proxy in
 * front of it, while a pooler hands its client a cancel key of its own, whatever server connection it then uses. Only
 * when A and B are both proven (and distinct) is the pool `'session'`; a pooler in session mode cannot be told from
 * one in transaction mode this way, and no other observation proves it either (a pooler that rotates its server
 * connections shows a different pid only sometimes), so every pooler is a `'pooler'` at best.
 *
 * Each round also tries what only a pooler does: A reads its pid, B opens a transaction and reads its pid, A reads
 * its pid again while B's transaction is open, B commits (sent at once, so that a pooler with a single server
 * connection does not wait forever), and A reads its pid twice more with both idle. B seeing A's pid, or A's pid
 * changing, is a pooler sharing server connections between transactions (`'transaction'`); a pooler in statement
 * mode refuses B's `BEGIN` (`'statement'`). A pooler that hands out its idle server connections in turn
 * (`server_round_robin`) gives A's last two reads two different ones once it has two, and A's read during B's
 * transaction makes it open a second: such a pooler is seen sharing at every check, so `pooler: 'session'` declared
 * on it is refused.
 * @internal
 */
export async function detectPoolTopology(pool: Pool, timeoutMs: number): Promise<PoolTopology> {
  const a = await checkoutPgClient(pool, timeoutMs);
  // Both connections have the checkout's 'error' listener until released (see checkoutPgClient): a backend ended
  // during the check (57P01) fails the check, it does not crash the process.
  let b: PoolClient | undefined;
  let broken = false;
  try {
    b = await checkoutPgClient(pool, timeoutMs);
    let proven = announcedPid(a) !== announcedPid(b);
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
      // Twice more with both connections idle: a pooler that hands out its idle server connections in turn (PgBouncer's
      // server_round_robin) gives A's two reads two different ones once it has two, which the reads around B's
      // transaction may miss (A's first read after it can get back the one it had).
      const third = await pidOf(a, timeoutMs);
      const fourth = await pidOf(a, timeoutMs);
      if (inTransaction === first || second !== first || third !== second || fourth !== third) return 'transaction';
      proven &&= first === announcedPid(a) && second === first && inTransaction === announcedPid(b);
    }
    return proven ? 'session' : 'pooler';
  } catch (error) {
    broken = true;
    throw error;
  } finally {
    a.release(broken);
    b?.release(broken);
  }
}

/**
 * The backend pid the server announced when `client` connected (`BackendKeyData`); undefined when the driver keeps
 * none (pg-native), which proves nothing.
 */
function announcedPid(client: PoolClient): number | undefined {
  const announced = (client as { processID?: number | null }).processID;
  return typeof announced === 'number' && announced > 0 ? announced : undefined;
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
