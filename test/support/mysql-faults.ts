import mysql from 'mysql2/promise';
import { createServer, type Server, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkSample, type SampledRow, type SamplerReport } from './invariant-checker.js';
import { stoppedAfterEach } from './leftovers.js';

/** A loopback TCP proxy in front of MySQL/MariaDB that resets every connection through it on demand. */
export interface ResetProxy {
  /** `url` (a database behind the proxy) with the proxy's host and port. */
  via(url: string): string;
  /** Resets every connection through the proxy at once (both sides see ECONNRESET). */
  resetAll(): void;
  close(): Promise<void>;
}

/** Starts a proxy to the server of `url` on a free loopback port. */
export async function startResetProxy(url: string): Promise<ResetProxy> {
  const target = new URL(url);
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
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
    upstream.connect(Number(target.port || 3306), target.hostname, () => {
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
    async close() {
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One snapshot of the committed lock rows per name and mode with their permits (? write, ? read defaults). */
const SAMPLE = `SELECT l.lock_name, l.mode, COUNT(*) AS held,
    COALESCE(p.permits, CASE l.mode WHEN 'W' THEN ? ELSE ? END) AS permits
  FROM locking l LEFT JOIN locking_permissions p ON p.lock_name = l.lock_name AND p.mode = l.mode
  GROUP BY l.lock_name, l.mode, p.permits`;

/**
 * `startDbSampler` on MySQL/MariaDB: reads `locking` every few milliseconds on a connection of its own and records
 * every name whose committed rows break the permits; a failed sample is counted and the connection opened again.
 */
export function startMysqlSampler(
  url: string,
  options: { intervalMs?: number; defaultPermits?: { read: number; write: number } } = {},
): { readonly report: SamplerReport; stop(): Promise<SamplerReport> } {
  const intervalMs = options.intervalMs ?? 5;
  const defaults = options.defaultPermits ?? { read: 1, write: 1 };
  const report: SamplerReport = { violations: [], samples: 0, failedSamples: 0 };
  let running = true;
  let connection: mysql.Connection | undefined;
  const loop = (async () => {
    while (running) {
      try {
        if (!connection) {
          connection = await mysql.createConnection({ uri: url, connectTimeout: 1000 });
          connection.on('error', () => undefined);
        }
        const [rows] = await connection.query(SAMPLE, [defaults.write, defaults.read]);
        report.samples++;
        checkSample(
          report,
          (rows as SampledRow[]).map((row) => ({ ...row, held: Number(row.held), permits: Number(row.permits) })),
        );
        await sleep(intervalMs);
      } catch {
        report.failedSamples++;
        const broken = connection;
        connection = undefined;
        broken?.destroy();
        if (running) await sleep(50);
      }
    }
  })();
  return stoppedAfterEach({
    report,
    async stop() {
      running = false;
      await loop;
      await connection?.end().catch(() => undefined);
      return report;
    },
  });
}
