import mysql from 'mysql2/promise';
import type { ContenderClient, ContenderSession } from './contender.js';

/** One connection of its own to a MySQL/MariaDB server (text protocol, as the library's statements use). */
export async function connectMysql(url: string): Promise<mysql.Connection> {
  const connection = await mysql.createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true });
  connection.on('error', (error: Error) => console.error(`bench connection error: ${error.message}`));
  return connection;
}

/** Runs `fn` on a short-lived connection. */
export async function onMysql<T>(url: string, fn: (connection: mysql.Connection) => Promise<T>): Promise<T> {
  const connection = await connectMysql(url);
  try {
    return await fn(connection);
  } finally {
    await connection.end();
  }
}

/**
 * A raw MySQL contender's session: one dedicated connection per benchmark client, each wrapped by `client`, closed
 * together (the MySQL twin of `openClientSession`).
 */
export async function openMysqlClientSession(
  url: string,
  count: number,
  client: (connection: mysql.Connection, index: number) => ContenderClient,
): Promise<ContenderSession> {
  const connections = await Promise.all(Array.from({ length: count }, () => connectMysql(url)));
  return {
    clients: connections.map(client),
    retries: () => 0,
    close: async () => {
      await Promise.all(connections.map((connection) => connection.end()));
    },
  };
}
