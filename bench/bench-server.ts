import { randomBytes } from 'node:crypto';

/** A database server the benchmark uses (started by it, or given by URL), and how to let go of it. */
export interface BenchServer {
  /** A URL of the server with the right to create and drop databases. */
  readonly adminUrl: string;
  /** Where it comes from, for the report. */
  readonly source: string;
  stop(): Promise<void>;
}

/** How one dialect creates and drops a database by name on the server at `adminUrl`. */
export interface DatabaseStatements {
  create(adminUrl: string, name: string): Promise<void>;
  drop(adminUrl: string, name: string): Promise<void>;
}

/**
 * Creates a fresh database `ndl_bench_<random>` on `server` and builds the benchmark's handle on it with `build`
 * (given the database's URL, its name, and `dispose`, which drops it and then stops the server). When creating or
 * building fails, the database is dropped and the server stopped before the error goes on.
 */
export async function createBenchDatabase<D>(
  server: BenchServer,
  statements: DatabaseStatements,
  build: (url: string, name: string, dispose: () => Promise<void>) => Promise<D>,
): Promise<D> {
  const name = `ndl_bench_${randomBytes(6).toString('hex')}`;
  const dispose = async (): Promise<void> => {
    try {
      await statements.drop(server.adminUrl, name);
    } finally {
      await server.stop();
    }
  };
  try {
    await statements.create(server.adminUrl, name);
    const url = new URL(server.adminUrl);
    url.pathname = `/${name}`;
    return await build(url.toString(), name, dispose);
  } catch (error) {
    await statements.drop(server.adminUrl, name).catch(() => undefined);
    await server.stop();
    throw error;
  }
}
