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
   * Freezes the network: nothing more is forwarded on the open connections, and new ones are accepted but never
   * reach the server (a partition that drops packets: no reset, no answer).
   */
  freeze(): void;
  /** Connections the proxy accepted since it started (each a connection attempt of a client). */
  readonly accepted: number;
  close(): Promise<void>;
}

/** Starts a proxy to the server of `url` on a free loopback port. */
export async function startResetProxy(url: string): Promise<ResetProxy> {
  let target = new URL(url);
  const pairs = new Set<[Socket, Socket]>();
  const held = new Set<Socket>();
  let accepted = 0;
  let frozen = false;
  const server: Server = createServer((client) => {
    accepted++;
    if (frozen) {
      client.on('error', () => client.destroy());
      held.add(client);
      return;
    }
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
    freeze() {
      frozen = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    get accepted() {
      return accepted;
    },
    switchTo(url) {
      target = new URL(url);
      resetAll();
    },
    async close() {
      resetAll();
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
