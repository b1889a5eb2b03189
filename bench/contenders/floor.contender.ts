import type { Contender, ContenderSession } from './contender.js';
import { openClientSession } from './pg-clients.js';

const INSERT = { name: 'bench_floor_insert', text: 'INSERT INTO bench_floor (id, app_id) VALUES ($1, $2)' };
const DELETE_SYNC = { name: 'bench_floor_delete', text: 'DELETE FROM bench_floor WHERE id = $1' };
const DELETE_ASYNC = { name: 'bench_floor_delete_async', text: 'SELECT bench_floor_delete_async($1) AS deleted' };

/**
 * The durable floor: an autocommitted INSERT of one row and its DELETE, on a table of its own, each client on keys of
 * its own (never busy). With `asyncDelete` the DELETE commits with `synchronous_commit = off`, as the library's
 * release does.
 */
export function floorContender(url: string, asyncDelete: boolean): Contender {
  let nextId = 0;
  const remove = asyncDelete ? DELETE_ASYNC : DELETE_SYNC;
  return {
    id: asyncDelete ? 'floor-async' : 'floor-sync',
    name: asyncDelete ? 'durable floor (async delete)' : 'durable floor (sync delete)',
    open: (workload): Promise<ContenderSession> =>
      openClientSession(url, workload.clients, (connection) => ({
        async attempt() {
          const id = ++nextId;
          await connection.query({ ...INSERT, values: [id, 'bench'] });
          await connection.query({ ...remove, values: [id] });
          return true;
        },
      })),
  };
}
