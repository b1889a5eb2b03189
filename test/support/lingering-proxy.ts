import { createServer, type Server, Socket } from 'node:net';

/**
 * A loopback TCP proxy to a database server that forwards both ways and, when a client's connection ends, ends its
 * side towards the server only `lingerMs` later: meanwhile the server goes on running that session (and it keeps its
 * locks), as when the server has not noticed yet that the client is gone. A PostgreSQL client's Terminate message is
 * lost on the way.
 */
export interface LingeringProxy {
  /** `url` (a database behind the proxy) with the proxy's host and port. */
  via(url: string): string;
  /**
   * Cuts every client's connection through the proxy (a network cut seen by the client only): the server goes on
   * running each session, with its locks, for `lingerMs` more.
   */
  cutClients(): void;
  close(): Promise<void>;
}

/** PostgreSQL's Terminate message, as a client sends it alone. */
const PG_TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);

/** Starts a lingering proxy on 127.0.0.1 (a free port) to the server of `url`. */
export async function startLingeringProxy(url: string, lingerMs: number): Promise<LingeringProxy> {
  const target = new URL(url);
  const defaultPort = target.protocol.startsWith('mysql') ? 3306 : 5432;
  const sockets = new Set<Socket>();
  const clients = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    clients.add(client);
    client.once('close', () => clients.delete(client));
    upstream.connect(Number(target.port || defaultPort), target.hostname);
    // PostgreSQL's client says goodbye (Terminate) before it closes; the proxy loses that message as a network may, so
    // the server learns of the end only from the connection's end (mysql2's destroy() sends no COM_QUIT).
    client.on('data', (chunk) => void (chunk.equals(PG_TERMINATE) || upstream.write(chunk)));
    upstream.on('data', (chunk) => client.write(chunk));
    client.once('close', () => {
      if (closed) return void upstream.destroy();
      const timer = setTimeout(() => {
        timers.delete(timer);
        upstream.destroy();
      }, lingerMs);
      timers.add(timer);
    });
    upstream.once('close', () => client.destroy());
    for (const socket of [client, upstream]) {
      socket.on('error', () => undefined);
      socket.once('close', () => sockets.delete(socket));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    via(databaseUrl: string): string {
      const through = new URL(databaseUrl);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
    cutClients(): void {
      for (const client of clients) client.destroy();
    },
    async close(): Promise<void> {
      closed = true; // the clients closed from here on linger no more (a timer would outlive the proxy)
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
