import pg from 'pg';
import type { ContenderClient, ContenderSession } from './contender.js';

/** Opens `count` dedicated connections (one per benchmark client). */
export async function openClients(url: string, count: number): Promise<pg.Client[]> {
  const clients = Array.from({ length: count }, () => new pg.Client({ connectionString: url }));
  for (const client of clients) {
    client.on('error', (error: Error) => console.error(`bench connection error: ${error.message}`));
  }
  await Promise.all(clients.map((client) => client.connect()));
  return clients;
}

/**
 * A raw contender's session: one dedicated connection per benchmark client, each wrapped by `client`, closed
 * together; `retries` counts the contender's own retries (none by default).
 */
export async function openClientSession(
  url: string,
  count: number,
  client: (connection: pg.Client, index: number) => ContenderClient,
  retries: () => number = () => 0,
): Promise<ContenderSession> {
  const connections = await openClients(url, count);
  return { clients: connections.map(client), retries, close: () => closeClients(connections) };
}

/** Closes every connection. */
export async function closeClients(clients: readonly pg.Client[]): Promise<void> {
  await Promise.all(clients.map((client) => client.end()));
}

/** The SQLSTATE of a driver error, if any. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
