import mysql from 'mysql2';
import { createServer, Socket, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { checkoutMysqlConnection } from '../../lib/store/mysql/mysql-checkout.util.js';
import { checkoutPgClient } from '../../lib/store/postgres/postgres-checkout.util.js';
import { PoolCheckoutTimeoutError } from '../../lib/store/pool-checkout.util.js';
import { DIALECTS, type TestDialect } from '../support/dialects.js';
import type { TestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

/** A connection through the gated proxy: the server's bytes reach the client only once its gate is open. */
interface GatedConnection {
  /** The port the proxy's session to the server uses (as the server sees its client). */
  readonly serverSidePort: Promise<number>;
  open(): void;
}

/**
 * A loopback proxy that holds everything the server sends on each connection (the handshake first) until the test
 * opens that connection's gate: a connection's start-up takes exactly as long as the test wants.
 */
async function startGatedProxy(url: string) {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  const connections: GatedConnection[] = [];
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    const held: Buffer[] = [];
    let gated = true;
    client.on('data', (bytes: Buffer) => upstream.write(bytes));
    upstream.on('data', (bytes: Buffer) => (gated ? held.push(bytes) : client.write(bytes)));
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('error', () => undefined);
      from.on('close', () => to.destroy());
      from.on('end', () => to.end());
    }
    const serverSidePort = new Promise<number>((resolve) => upstream.once('connect', () => resolve(upstream.localPort!)));
    upstream.connect(Number(target.port), target.hostname);
    connections.push({
      serverSidePort,
      open() {
        gated = false;
        for (const bytes of held.splice(0)) client.write(bytes);
      },
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const via = new URL(url);
  via.hostname = '127.0.0.1';
  via.port = String((server.address() as { port: number }).port);
  return {
    url: via.toString(),
    connections,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A pool of one connection as the library's users configure it (TypeORM's `pg` Pool, `mysql2` pool). */
interface OnePool {
  /** The library's checkout within `ms`: resolves with a function giving the connection back. */
  checkout(ms: number): Promise<() => void>;
  /** Connections the pool has lent and not had back. */
  inUse(): number;
  /** Connections it holds idle. */
  idle(): number;
  end(): Promise<void>;
}

function onePool(dialect: TestDialect, url: string): OnePool {
  if (dialect.name === 'PostgreSQL') {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    pool.on('error', () => undefined);
    return {
      checkout: async (ms) => {
        const client = await checkoutPgClient(pool, ms);
        return () => client.release();
      },
      inUse: () => pool.totalCount - pool.idleCount,
      idle: () => pool.idleCount,
      end: () => pool.end(),
    };
  }
  const pool = mysql.createPool({ uri: url, connectionLimit: 1 });
  const internals = pool as unknown as { _allConnections: { length: number }; _freeConnections: { length: number } };
  return {
    checkout: async (ms) => {
      const connection = await checkoutMysqlConnection(pool, ms);
      return () => connection.release();
    },
    inUse: () => internals._allConnections.length - internals._freeConnections.length,
    idle: () => internals._freeConnections.length,
    end: () => new Promise<void>((resolve, reject) => pool.end((error) => (error ? reject(error) : resolve()))),
  };
}

/** The server's sessions whose client is one of `ports` (the proxy's side of its connections). */
async function sessionsFrom(db: TestDatabase, dialect: TestDialect, ports: number[]): Promise<number> {
  if (dialect.name === 'PostgreSQL') {
    const rows = await db.query('SELECT 1 FROM pg_stat_activity WHERE client_port = ANY ($1::int[])', [ports]);
    return rows.length;
  }
  const rows = await db.query<{ HOST: string }>('SELECT HOST FROM information_schema.PROCESSLIST');
  return rows.filter((row) => ports.includes(Number(String(row.HOST).split(':').pop()))).length;
}

// Issue 50, item 10. A checkout gives up after queryTimeoutMs; the connection the pool opens for it may still arrive
// afterwards (here: the pool's one connection was being opened for an earlier checkout, which gave up too, and the
// pool opened the next one for the queued request). The connection that comes late must go back to the pool: else the
// pool has one connection fewer for good (all of them, after as many such episodes) and the server keeps its session.
for (const dialect of DIALECTS) dialect.describe(`a pool connection that arrives after its checkout gave up (${dialect.name})`, () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await dialect.createDatabase();
  }, 60_000);
  afterAll(() => db?.drop());

  it('is given back: afterwards the pool lends it again, none is in use, and the server keeps no session of it', async () => {
    const proxy = await startGatedProxy(db.url);
    const pool = onePool(dialect, proxy.url);
    let ended = false;
    try {
      // The first checkout opens the pool's only connection, whose start-up the proxy holds; the second queues.
      const first = pool.checkout(200);
      const second = pool.checkout(3000);
      await expect(first).rejects.toBeInstanceOf(PoolCheckoutTimeoutError);
      // The first gave up (its connection destroyed): the pool opens the next connection for the queued checkout.
      await until(() => proxy.connections.length === 2);
      await expect(second).rejects.toBeInstanceOf(PoolCheckoutTimeoutError);
      proxy.connections[1]!.open(); // the connection comes, after its checkout gave up

      await until(() => pool.idle() === 1, 5000); // given back: idle in the pool
      expect(pool.inUse()).toBe(0);
      const release = await pool.checkout(3000); // the pool lends it again
      expect(pool.inUse()).toBe(1);
      release();
      expect(pool.inUse()).toBe(0);
    } finally {
      // A lent connection would keep `pg`'s end() waiting for good: bounded, then the proxy ends every connection.
      ended = await Promise.race([pool.end().then(() => true), sleep(5000).then(() => false)]);
      await proxy.close();
    }
    expect(ended).toBe(true);
    const ports = await Promise.all(proxy.connections.map((connection) => connection.serverSidePort));
    await until(async () => (await sessionsFrom(db, dialect, ports)) === 0);
  }, 30_000);
});
