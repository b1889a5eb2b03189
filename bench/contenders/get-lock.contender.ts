import type mysql from 'mysql2/promise';
import type { BenchGroup } from '../workloads.js';
import type { Contender, ContenderClient, ContenderSession } from './contender.js';
import { openMysqlClientSession } from './mysql-clients.js';

/** `SELECT GET_LOCK(?, 0) AS l0, …`: every name of the group tried at once, without waiting. */
const tryAll = (count: number): string =>
  `SELECT ${Array.from({ length: count }, (_, i) => `GET_LOCK(?, 0) AS l${i}`).join(', ')}`;
const releaseAll = (count: number): string =>
  `SELECT ${Array.from({ length: count }, (_, i) => `RELEASE_LOCK(?) AS r${i}`).join(', ')}`;

/**
 * MySQL/MariaDB user-level locks (`GET_LOCK` / `RELEASE_LOCK`, several per session): the speed reference on that
 * server, as advisory locks are on PostgreSQL (not durable: a lock lives in one session and is gone with it). They
 * have no shared mode: a read lock of the group is taken exclusively. Names are server-wide, so `prefix` (the bench
 * database's name) keeps them apart from anything else on a shared server.
 */
export function getLockContender(url: string, prefix: string): Contender {
  return {
    id: 'get-lock',
    name: 'GET_LOCK / RELEASE_LOCK',
    open: (workload): Promise<ContenderSession> =>
      openMysqlClientSession(url, workload.clients, (connection) => getLockClient(connection, prefix)),
  };
}

function getLockClient(connection: mysql.Connection, prefix: string): ContenderClient {
  return {
    async attempt(group: BenchGroup) {
      const names = group.map((lock) => `${prefix}:${lock.name}`);
      const [rows] = await connection.query<mysql.RowDataPacket[]>(tryAll(names.length), names);
      const taken = names.filter((_, i) => Number(rows[0]?.[`l${i}`]) === 1);
      if (taken.length > 0) await connection.query(releaseAll(taken.length), taken);
      return taken.length === names.length;
    },
  };
}
