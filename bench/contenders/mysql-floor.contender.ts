import type { Contender, ContenderSession } from './contender.js';
import { openMysqlClientSession } from './mysql-clients.js';

const INSERT = 'INSERT INTO bench_floor (id, app_id) VALUES (?, ?)';
const DELETE = 'DELETE FROM bench_floor WHERE id = ?';

/**
 * The durable floor on InnoDB: an autocommitted INSERT of one row and its DELETE, on a table of its own, each client
 * on keys of its own (never busy). Both commits are durable: InnoDB has no per-transaction asynchronous commit (its
 * `innodb_flush_log_at_trx_commit` is global), so this is the PostgreSQL floor with a synchronous delete, and the
 * library's release on MySQL commits durably too.
 */
export function mysqlFloorContender(url: string): Contender {
  let nextId = 0;
  return {
    id: 'floor-mysql',
    name: 'durable floor (InnoDB)',
    open: (workload): Promise<ContenderSession> =>
      openMysqlClientSession(url, workload.clients, (connection) => ({
        async attempt() {
          const id = ++nextId;
          await connection.query(INSERT, [id, 'bench']);
          await connection.query(DELETE, [id]);
          return true;
        },
      })),
  };
}
