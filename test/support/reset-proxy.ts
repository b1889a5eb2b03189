import { createServer, type Server, Socket } from 'node:net';

/** A loopback TCP proxy in front of a database server (any protocol) that resets every connection through it on demand. */
export interface ResetProxy {
  /** `url` (a database behind the proxy) with the proxy's host and port. */
  via(url: string): string;
  /** Resets every connection through the proxy at once (both sides see ECONNRESET). */
  resetAll(): void;
  /**
   * Points the proxy at the server of `url` (a failover: a virtual IP moved, HAProxy's health check switched): every
   * connection through it is reset, new ones reach the new server.
   */
  switchTo(url: string): void;
  /**
   * Freezes every connection (open ones and new ones): nothing passes either way, nothing is closed. With `ms`, a
   * network partition that heals: the bytes held back flow again after `ms`, and the promise resolves then. Without,
   * a partition that drops packets until `close()` (no reset, no answer).
   */
  freeze(ms?: number): Promise<void>;
  /** Connections the proxy accepted since it started (each a connection attempt of a client). */
  readonly accepted: number;
  close(): Promise<void>;
}

/** Starts a proxy to the server of `url` on a free loopback port. */
export async function startResetProxy(url: string): Promise<ResetProxy> {
  let target = new URL(url);
  const pairs = new Set<[Socket, Socket]>();
  const waiting = new Set<Socket>();
  let accepted = 0;
  let thawed: Promise<void> | undefined;
  const server: Server = createServer(async (client) => {
    accepted++;
    client.pause().on('error', () => client.destroy());
    waiting.add(client);
    while (thawed) await thawed; // a new connection during a freeze waits for the thaw
    waiting.delete(client);
    if (client.destroyed) return;
    const upstream = new Socket();
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.connect(Number(target.port || (target.protocol.startsWith('postgres') ? 5432 : 3306)), target.hostname, () => {
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const resetAll = () => {
    for (const [client, upstream] of [...pairs]) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    pairs.clear();
  };
  return {
    via(databaseUrl) {
      const proxied = new URL(databaseUrl);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(port);
      return proxied.toString();
    },
    resetAll,
    switchTo(url) {
      target = new URL(url);
      resetAll();
    },
    async freeze(ms) {
      const frozen = [...pairs];
      for (const [client, upstream] of frozen) {
        client.unpipe(upstream).pause();
        upstream.unpipe(client).pause();
      }
      let thaw!: () => void;
      thawed = new Promise((resolve) => (thaw = resolve));
      if (ms === undefined) return;
      await new Promise((resolve) => setTimeout(resolve, ms));
      for (const pair of frozen) {
        if (!pairs.has(pair)) continue;
        const [client, upstream] = pair;
        client.pipe(upstream);
        upstream.pipe(client);
      }
      thawed = undefined;
      thaw();
    },
    get accepted() {
      return accepted;
    },
    async close() {
      resetAll();
      for (const socket of waiting) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
