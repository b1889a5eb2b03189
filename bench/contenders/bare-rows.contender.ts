import type { Contender, ContenderSession } from './contender.js';
import { openClientSession } from './pg-clients.js';

/** A grant's lock row alone: a stamp from the library's sequence and one `locking` row, autocommitted. */
const INSERT_LOCK_ROW = {
  name: 'bench_rows_lock',
  text: `INSERT INTO locking (lock_name, mode, app_id, stamp) VALUES ($1, 'W', $2, nextval('locking_stamp_seq'))
         RETURNING stamp`,
};

/** A grant's lock row and its log row (`ACQUIRED`, with a lease), in one autocommitted statement. */
const INSERT_LOCK_AND_LOG_ROWS = {
  name: 'bench_rows_lock_log',
  text: `WITH s AS (SELECT nextval('locking_stamp_seq') AS stamp),
              l AS (INSERT INTO locking (lock_name, mode, app_id, stamp) SELECT $1, 'W', $2, stamp FROM s)
         INSERT INTO locking_log (stamp, app_id, instance, lock_names, lock_modes, status, lease_expires)
         SELECT stamp, $2, $2, ARRAY[$1::text], ARRAY['W']::char(1)[], 'ACQUIRED', now() + interval '30 seconds' FROM s
         RETURNING stamp`,
};

const RELEASE = { name: 'bench_rows_release', text: 'SELECT bench_rows_release_async($1, $2) AS deleted' };

/**
 * What a grant's rows cost without any check, in the library's own tables: the lock row alone, or the lock row and
 * its log row, inserted in one autocommitted statement (durable) and released asynchronously like the library
 * (`bench_rows_release_async`: the log row to RELEASED, the lock row deleted). Each client takes a name of its own,
 * so nothing is ever busy. Between the durable floor and the library, these rows say where an uncontended grant's
 * time goes.
 */
export function bareRowsContender(url: string, withLogRow: boolean): Contender {
  const insert = withLogRow ? INSERT_LOCK_AND_LOG_ROWS : INSERT_LOCK_ROW;
  return {
    id: withLogRow ? 'rows-lock-log' : 'rows-lock',
    name: withLogRow ? 'bare SQL: lock row + log row' : 'bare SQL: lock row',
    open: (workload): Promise<ContenderSession> =>
      openClientSession(url, workload.clients, (connection, i) => ({
        async attempt() {
          const { rows } = await connection.query<{ stamp: string }>({ ...insert, values: [`bench_rows_${i}`, 'bench'] });
          await connection.query({ ...RELEASE, values: [rows[0]?.stamp, withLogRow] });
          return true;
        },
      })),
  };
}
