import { createServer, type Server, Socket } from 'node:net';

/**
 * What the whole proxy does once a `hold` struck: `'none'` goes on as before; `'mute'` lets every statement of every
 * connection reach the server and drops every answer (the network loses the answers only); `'partition'` drops
 * everything either way on every connection (the struck one's held answer excepted, see `Held.release`). New
 * connections made during a mute or a partition get no answer at all.
 */
export type AfterStrike = 'none' | 'mute' | 'partition';

/** A statement whose answer the proxy holds back. */
export interface Held {
  /** Forwards the answer held back (and, while the proxy is not muted or partitioned, what follows on that connection). */
  release(): void;
  /** Settles when the client's side of the struck connection closes. */
  readonly clientClosed: Promise<void>;
}

/**
 * A loopback TCP proxy in front of PostgreSQL or MySQL/MariaDB that lets a chosen statement reach the server and holds
 * back its answer: a slow network (released later), or a lost answer (never released). It matches the bytes a client
 * sends: PostgreSQL's Parse/Bind messages (a named prepared statement's name or its text), MySQL's COM_QUERY text.
 */
export interface AnswerProxy {
  /** `url` (a database behind the proxy) with the proxy's host and port. */
  via(url: string): string;
  /**
   * Arms the proxy for the next statement whose bytes contain `pattern` (`atCommit`: for the next COMMIT sent on that
   * connection after it, a statement inside a MySQL transaction). That statement is forwarded to the server; its
   * answer, and all that follows on its connection, is held back; `then` applies to the rest. Resolves once it struck;
   * rejects when none came within 10 s.
   */
  hold(pattern: string, options?: { atCommit?: boolean; then?: AfterStrike }): Promise<Held>;
  /** Back to forwarding: every connection through the proxy is reset (their streams lost bytes), new ones go through. */
  heal(): void;
  close(): Promise<void>;
}

interface Connection {
  readonly client: Socket;
  readonly upstream?: Socket;
  /** The answers held back on this connection, while it holds. */
  holding?: Buffer[];
  /** The armed hold matched here; it strikes at this connection's next COMMIT. */
  awaitingCommit?: Armed;
  /** The end of the last chunk the client sent (a pattern split across two chunks still matches). */
  tail: string;
  readonly closed: Promise<void>;
}

interface Armed {
  readonly pattern: string;
  readonly atCommit: boolean;
  readonly then: AfterStrike;
  readonly struck: (held: Held) => void;
}

/** Starts a proxy on 127.0.0.1 (a free port) to the server of `url`. */
export async function startAnswerProxy(url: string): Promise<AnswerProxy> {
  const target = new URL(url);
  const port = Number(target.port || (target.protocol.startsWith('mysql') ? 3306 : 5432));
  let mode: AfterStrike = 'none';
  let armed: Armed | undefined;
  const connections = new Set<Connection>();

  const strike = (conn: Connection, hit: Armed) => {
    armed = undefined;
    conn.awaitingCommit = undefined;
    conn.holding = [];
    mode = hit.then;
    hit.struck({
      release: () => {
        const held = conn.holding ?? [];
        conn.holding = undefined;
        for (const chunk of held) conn.client.write(chunk);
      },
      clientClosed: conn.closed,
    });
  };

  const server: Server = createServer((client) => {
    client.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    if (mode !== 'none') {
      // No answer: the connection attempt hangs until the proxy heals (then it is reset).
      connections.add({ client, tail: '', closed });
      return;
    }
    const upstream = new Socket();
    upstream.on('error', () => undefined);
    const conn: Connection = { client, upstream, tail: '', closed };
    connections.add(conn);
    const end = () => {
      connections.delete(conn);
      client.destroy();
      upstream.destroy();
    };
    client.once('close', end);
    upstream.once('close', end);
    upstream.connect(port, target.hostname);
    client.on('data', (chunk: Buffer) => {
      if (mode === 'partition') return; // lost on the way
      const text = chunk.toString('latin1');
      const seen = conn.tail + text;
      conn.tail = text.slice(-64);
      const hit = armed && !conn.holding && seen.includes(armed.pattern) ? armed : undefined;
      upstream.write(chunk); // the statement reaches the server, whatever comes of its answer
      if (hit && !hit.atCommit) strike(conn, hit);
      else if (hit) (conn.awaitingCommit = hit), (armed = undefined);
      else if (conn.awaitingCommit && /\bCOMMIT\b/i.test(text)) strike(conn, conn.awaitingCommit);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (conn.holding) conn.holding.push(chunk);
      else if (mode === 'none') client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  const resetAll = () => {
    for (const { client, upstream } of [...connections]) {
      client.resetAndDestroy();
      upstream?.resetAndDestroy();
    }
    connections.clear();
  };
  return {
    via(databaseUrl) {
      const proxied = new URL(databaseUrl);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(own);
      return proxied.toString();
    },
    hold: (pattern, { atCommit = false, then = 'none' } = {}) =>
      new Promise<Held>((resolve, reject) => {
        const timer = setTimeout(() => {
          armed = undefined;
          reject(new Error(`no statement matching ${pattern} went through the proxy within 10 s`));
        }, 10_000);
        armed = { pattern, atCommit, then, struck: (held) => (clearTimeout(timer), resolve(held)) };
      }),
    heal() {
      armed = undefined;
      mode = 'none';
      resetAll();
    },
    async close() {
      armed = undefined;
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
