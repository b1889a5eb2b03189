import { createServer, type Server, type Socket } from 'node:net';

/** A TCP server that accepts every connection and never writes a byte, nor closes one: a database that hangs. */
export interface SilentServer {
  readonly port: number;
  /** Connections accepted since it started. */
  readonly accepted: number;
  /** Connections still open (the client has not closed them). */
  readonly open: number;
  close(): Promise<void>;
}

/** Starts a silent server on a free loopback port. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    socket.resume(); // reads (and drops) what the client sends, so that its end is seen
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    get accepted() {
      return accepted;
    },
    get open() {
      return sockets.size;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The sockets of this process to `port` (Node's `_getActiveHandles`, undocumented: read with care). */
export function socketsTo(port: number): unknown[] {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return handles.filter((handle) => (handle as { remotePort?: number } | null)?.remotePort === port);
}
