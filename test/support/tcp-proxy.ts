import { createServer, type Server, Socket } from 'node:net';

/** What the proxy does to the connection that sends the next matching statement. */
export type ProxyFault =
  /** Resets the client's socket before the statement reaches the server: nothing ran, the client sees ECONNRESET. */
  | 'reset-before'
  /** Lets the statement run and commit, swallows the answer, then resets the client's socket (ECONNRESET). */
  | 'reset-after-commit'
  /** Lets the statement run and commit, then forwards nothing more either way: the client waits for an answer. */
  | 'stall'
  /**
   * Lets the statement run and answers it, then freezes every connection through the proxy: nothing more is forwarded
   * either way (nothing is lost either) until `thaw()`, or `resetAll()`.
   */
  | 'freeze';

/**
 * A loopback TCP proxy in front of PostgreSQL, or MySQL/MariaDB (a `mysql:` url), that breaks one chosen statement's
 * connection on demand.
 */
export interface FaultProxy {
  /** `url` (a database behind the proxy) with the proxy's host and port. */
  via(url: string): string;
  /**
   * Arms `fault` for the next statement whose Parse or Bind message (PostgreSQL), or COM_QUERY (MySQL), contains
   * `pattern`; resolves when it fired (a `'freeze'`: once it has struck), and rejects if no such statement came within 10 s. On MySQL a statement inside
   * a transaction is answered; `'reset-after-commit'` and `'stall'` then act on the answer of the transaction's COMMIT.
   */
  arm(pattern: string, fault: ProxyFault): Promise<void>;
  /** Resets every connection through the proxy at once (what a `'freeze'` held back is dropped). */
  resetAll(): void;
  /** Ends a `'freeze'`: forwards what it held back, in order, and everything after. */
  thaw(): void;
  close(): Promise<void>;
}

interface Armed {
  readonly pattern: string;
  readonly fault: ProxyFault;
  readonly fired: () => void;
}

/**
 * Splits a PostgreSQL protocol stream into messages: a type byte and an int32 length (which counts itself). The
 * client's first message (startup) has no type byte.
 */
class MessageSplitter {
  private buffer = Buffer.alloc(0);

  constructor(private untyped: boolean) {}

  push(chunk: Buffer): Array<{ type: string; bytes: Buffer }> {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const messages: Array<{ type: string; bytes: Buffer }> = [];
    for (;;) {
      const head = this.untyped ? 0 : 1;
      if (this.buffer.length < head + 4) break;
      const length = this.buffer.readInt32BE(head);
      if (this.buffer.length < head + length) break;
      messages.push({ type: this.untyped ? '' : String.fromCharCode(this.buffer[0]!), bytes: this.buffer.subarray(0, head + length) });
      this.buffer = this.buffer.subarray(head + length);
      this.untyped = false;
    }
    return messages;
  }
}

/**
 * Splits a MySQL protocol stream into packets: a 3-byte little-endian payload length and a sequence byte. `type` is
 * the command byte of a client's packet (0x03: COM_QUERY, whose text follows).
 */
class MysqlPacketSplitter {
  private buffer = Buffer.alloc(0);

  push(chunk: Buffer): Array<{ type: string; bytes: Buffer; text: string }> {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const packets: Array<{ type: string; bytes: Buffer; text: string }> = [];
    while (this.buffer.length >= 4) {
      const length = this.buffer.readUIntLE(0, 3);
      if (this.buffer.length < 4 + length) break;
      const bytes = this.buffer.subarray(0, 4 + length);
      packets.push({ type: length > 0 ? String.fromCharCode(bytes[4]!) : '', bytes, text: bytes.subarray(5).toString('latin1') });
      this.buffer = this.buffer.subarray(4 + length);
    }
    return packets;
  }
}

/** MySQL's COM_QUERY command byte. */
const COM_QUERY = String.fromCharCode(0x03);

/** Starts a proxy on 127.0.0.1 (a free port) to the server of `url`. */
export async function startFaultProxy(url: string): Promise<FaultProxy> {
  const target = new URL(url);
  if (target.protocol.startsWith('mysql')) return startMysqlFaultProxy(target);
  const sockets = new Set<Socket>();
  const arming: Arming = { held: [] };
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    const fromClient = new MessageSplitter(true);
    const fromServer = new MessageSplitter(false);
    let faulted: ProxyFault | undefined;
    /** A `'freeze'` matched on this connection: it strikes once the statement's answer (up to ReadyForQuery) is sent. */
    let freezeAfterAnswer: Armed | undefined;
    joinTo(client, upstream, sockets, () => faulted === 'stall');
    upstream.connect(Number(target.port || 5432), target.hostname);
    client.on('data', holding(arming, (chunk: Buffer) => {
      if (faulted) return; // after a fault nothing more reaches the server
      for (const { type, bytes } of fromClient.push(chunk)) {
        const armed = arming.armed;
        const hit = armed && (type === 'P' || type === 'B') && bytes.toString('latin1').includes(armed.pattern) ? armed : undefined;
        if (hit) {
          arming.armed = undefined;
          if (hit.fault === 'freeze') freezeAfterAnswer = hit;
          else (faulted = hit.fault), hit.fired();
          if (hit.fault === 'reset-before') {
            client.resetAndDestroy();
            upstream.destroy();
            return;
          }
        }
        upstream.write(bytes);
      }
    }));
    upstream.on('data', holding(arming, (chunk: Buffer) => {
      const messages = fromServer.push(chunk);
      if (!faulted) {
        for (const { type, bytes } of messages) {
          if (arming.frozen) arming.held.push(() => client.write(bytes));
          else client.write(bytes);
          if (freezeAfterAnswer && type === 'Z') {
            arming.frozen = true;
            freezeAfterAnswer.fired();
            freezeAfterAnswer = undefined;
          }
        }
        return;
      }
      // The statement ran; its answer never reaches the client.
      if (faulted === 'reset-after-commit' && messages.some((m) => m.type === 'Z')) {
        client.resetAndDestroy();
        upstream.destroy();
      }
    }));
  });
  return listening(server, sockets, arming);
}

/**
 * The MySQL twin of `startFaultProxy`: a statement matched inside a transaction runs and is answered; the fault then
 * strikes at the transaction's COMMIT (or at once for `'reset-before'`, or when the statement runs in autocommit, at
 * its own answer: the next COM_QUERY's answer is the COMMIT's only when one is sent).
 */
async function startMysqlFaultProxy(target: URL): Promise<FaultProxy> {
  const sockets = new Set<Socket>();
  const arming: Arming = { held: [] };
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    const fromClient = new MysqlPacketSplitter();
    /** A `'freeze'` matched on this connection: it strikes once the statement's answer is sent. */
    let freezeAfterAnswer: Armed | undefined;
    /** The fault waiting for its COMMIT on this connection, then striking at the answer. */
    let pending: ProxyFault | undefined;
    let faulted: ProxyFault | undefined;
    joinTo(client, upstream, sockets, () => faulted === 'stall');
    upstream.connect(Number(target.port || 3306), target.hostname);
    client.on('data', holding(arming, (chunk: Buffer) => {
      if (faulted) return; // after a fault nothing more reaches the server
      for (const { type, bytes, text } of fromClient.push(chunk)) {
        const query = type === COM_QUERY;
        const armed = arming.armed;
        const hit = armed && query && text.includes(armed.pattern) ? armed : undefined;
        if (hit) {
          arming.armed = undefined;
          if (hit.fault !== 'freeze') hit.fired();
          if (hit.fault === 'reset-before') {
            faulted = hit.fault;
            client.resetAndDestroy();
            upstream.destroy();
            return;
          }
          if (hit.fault === 'freeze') freezeAfterAnswer = hit;
          else pending = hit.fault;
        } else if (pending && query && /^\s*COMMIT\b/i.test(text)) {
          faulted = pending;
          pending = undefined;
        }
        upstream.write(bytes);
      }
    }));
    upstream.on('data', holding(arming, (chunk: Buffer) => {
      if (!faulted) {
        client.write(chunk);
        // The answer of a statement is one small packet, sent in one chunk.
        if (freezeAfterAnswer) {
          arming.frozen = true;
          freezeAfterAnswer.fired();
          freezeAfterAnswer = undefined;
        }
        return;
      }
      // The COMMIT ran; its answer never reaches the client.
      if (faulted === 'reset-after-commit') {
        client.resetAndDestroy();
        upstream.destroy();
      }
    }));
  });
  return listening(server, sockets, arming);
}

/** Where the next fault waits, and a freeze's state (shared by a proxy's connections). */
interface Arming {
  armed?: Armed;
  /** A `'freeze'` struck: data handlers are held back, in arrival order, until `thaw()`. */
  frozen?: boolean;
  held: Array<() => void>;
}

/** `handle`, or held back while the proxy is frozen (replayed in order by `thaw()`). */
function holding(arming: Arming, handle: (chunk: Buffer) => void): (chunk: Buffer) => void {
  return (chunk) => {
    if (arming.frozen) arming.held.push(() => handle(chunk));
    else handle(chunk);
  };
}

/** Listens on a free loopback port and returns the proxy's handle. */
async function listening(server: Server, sockets: Set<Socket>, arming: Arming): Promise<FaultProxy> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    via: (url) => {
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(port);
      return proxied.toString();
    },
    arm: (pattern, fault) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          arming.armed = undefined;
          reject(new Error(`no statement matching ${pattern} went through the proxy`));
        }, 10_000);
        arming.armed = { pattern, fault, fired: () => (clearTimeout(timer), resolve()) };
      }),
    resetAll: () => {
      arming.frozen = false;
      arming.held.length = 0;
      for (const socket of sockets) socket.resetAndDestroy();
      sockets.clear();
    },
    thaw: () => {
      arming.frozen = false;
      while (!arming.frozen && arming.held.length > 0) arming.held.shift()!();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Ends both sockets of a proxied connection when either breaks or closes, unless the connection is stalled. */
function joinTo(client: Socket, upstream: Socket, sockets: Set<Socket>, stalled: () => boolean): void {
  const end = () => {
    sockets.delete(client);
    sockets.delete(upstream);
    client.destroy();
    upstream.destroy();
  };
  client.on('error', end).on('close', () => !stalled() && end());
  upstream.on('error', end).on('close', () => !stalled() && end());
}
