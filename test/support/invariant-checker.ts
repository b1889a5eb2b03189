import mysql from 'mysql2/promise';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { stoppedAfterEach } from './leftovers.js';

/** What a database-side sampler saw. */
export interface SamplerReport {
  /** Breaches of DESIGN.md invariant 1 seen in committed rows of `locking`. */
  readonly violations: string[];
  /** Samples taken (the database answered). */
  samples: number;
  /** Samples that failed (the database was away, or the connection broke). */
  failedSamples: number;
}

/**
 * One statement, one snapshot: the committed lock rows per name and mode, with the permits the acquisition itself
 * would apply (the permits row, or the module's default). $1 default write permits, $2 default read permits. The
 * same SQL on PostgreSQL and MySQL (`$n::int` becomes `?` there); counts arrive as numbers or strings.
 */
const SAMPLE = `SELECT l.lock_name, l.mode, COUNT(*) AS held,
    COALESCE(p.permits, CASE l.mode WHEN 'W' THEN $1::int ELSE $2::int END) AS permits
  FROM locking l LEFT JOIN locking_permissions p ON p.lock_name = l.lock_name AND p.mode = l.mode
  GROUP BY l.lock_name, l.mode, p.permits`;

/** A connection of the sampler's own: it answers SAMPLE, or fails (then it is closed and another one opened). */
interface SampleConnection {
  sample(write: number, read: number): Promise<SampledRow[]>;
  close(): Promise<void>;
}

/** Opens the sampler's connection to `url`: PostgreSQL, or MySQL/MariaDB for a `mysql://` URL. */
async function openSampleConnection(url: string): Promise<SampleConnection> {
  const counted = (rows: readonly SampledRow[]) => rows.map((row) => ({ ...row, held: Number(row.held), permits: Number(row.permits) }));
  if (url.startsWith('mysql:')) {
    const connection = await mysql.createConnection({ uri: url, connectTimeout: 1000 });
    connection.on('error', () => undefined);
    return {
      sample: async (write, read) => counted((await connection.query(SAMPLE.replace(/\$\d::int/g, '?'), [write, read]))[0] as SampledRow[]),
      close: async () => connection.destroy(),
    };
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000, application_name: 'ndl-test-sampler' });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return {
    sample: async (write, read) => counted((await client.query<SampledRow>(SAMPLE, [write, read])).rows),
    close: () => client.end().catch(() => undefined),
  };
}

/** One sampled row: the committed lock rows of a name in one mode, and the permits the acquisition would apply. */
interface SampledRow {
  lock_name: string;
  mode: 'R' | 'W';
  held: number;
  permits: number;
}

/** Records in `report` every name of one sample beyond its permits, or with a reader and a writer together. */
function checkSample(report: SamplerReport, rows: readonly SampledRow[]): void {
  const modes = new Map<string, Set<string>>();
  for (const row of rows) {
    modes.set(row.lock_name, (modes.get(row.lock_name) ?? new Set()).add(row.mode));
    if (row.held > row.permits) {
      report.violations.push(`${row.lock_name}: ${row.held} ${row.mode === 'W' ? 'writers' : 'readers'} > ${row.permits} in the database`);
    }
  }
  for (const [name, seen] of modes) {
    if (seen.size > 1) report.violations.push(`${name}: a reader and a writer together in the database`);
  }
}

/**
 * The database side of the invariant checker: reads `locking` every few milliseconds on a connection of its own and
 * records every name whose committed rows break the permits (writers > write permits, readers > read permits, a
 * reader and a writer together). Rows stay in `locking` until a release, a reap or a recovery deletes them (the
 * acquisition counts every row, expired or not), so any sample beyond the permits is an over-grant. It rides
 * through outages: a failed sample is counted and the connection opened again. PostgreSQL, or MySQL/MariaDB for a
 * `mysql://` URL.
 */
export function startDbSampler(
  url: string,
  options: { intervalMs?: number; defaultPermits?: { read: number; write: number } } = {},
): { readonly report: SamplerReport; stop(): Promise<SamplerReport> } {
  const intervalMs = options.intervalMs ?? 5;
  const defaults = options.defaultPermits ?? { read: 1, write: 1 };
  const report: SamplerReport = { violations: [], samples: 0, failedSamples: 0 };
  let running = true;
  let connection: SampleConnection | undefined;
  const loop = (async () => {
    while (running) {
      try {
        connection ??= await openSampleConnection(url);
        const rows = await connection.sample(defaults.write, defaults.read);
        report.samples++;
        checkSample(report, rows);
        await sleep(intervalMs);
      } catch {
        report.failedSamples++;
        const broken = connection;
        connection = undefined;
        await broken?.close();
        if (running) await sleep(50);
      }
    }
  })();
  return stoppedAfterEach({
    report,
    async stop() {
      running = false;
      await loop;
      await connection?.close();
      return report;
    },
  });
}

/** Polls until a query on a connection of its own answers (the server is up and accepts the test's sessions). */
export async function rowsOrUndefined<R extends pg.QueryResultRow>(url: string, text: string, values?: unknown[]): Promise<R[] | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query<R>(text, values)).rows;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}
