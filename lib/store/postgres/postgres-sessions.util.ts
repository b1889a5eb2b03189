import type { PoolClient } from 'pg';
import type { InstanceSession, ListenerCallbacks, LockListener } from '../lock.store.js';
import { readOnlyServer, toLockError } from './pg-error.util.js';
import { HANDOVER_MARK, TRY_CLAIM_APP_ID } from './postgres-lock.queries.sql.js';
import { DEFAULT_LOCK_TABLES, inLockTables, type LockTables, lockNotifyChannel } from '../lock-tables.util.js';
import type { SessionLane } from './session-lane.util.js';

/**
 * Sessions that outlive one statement, each on a connection of its own taken out of the DataSource's pool and
 * destroyed (never handed back) when it ends: the instance lock and the LISTEN connection.
 * @internal
 */

/**
 * Names the session in `pg_stat_activity` and takes the instance lock of `appId`; undefined when a twin holds it.
 * While the session lives, `lane` sends the hot path's statements on its connection when it is idle.
 */
export async function openInstanceSession(
  client: PoolClient,
  appId: string,
  instance: string,
  lane: SessionLane,
  tables: LockTables = DEFAULT_LOCK_TABLES,
): Promise<InstanceSession | undefined> {
  let alive = true;
  let open = true;
  let pid = 0;
  // Stays attached after the end: a broken connection may still emit 'error' while it is destroyed.
  client.on('error', () => {
    alive = false;
  });
  try {
    await client.query(`SELECT set_config('application_name', $1, false)`, [
      `nestjs-db-locks ${appId} ${instance}`.slice(0, 63),
    ]);
    const claimed = (
      await client.query<{ claimed: boolean; pid: number; read_only: string | null }>(inLockTables(TRY_CLAIM_APP_ID, tables), [appId])
    ).rows[0];
    if (claimed?.read_only) throw readOnlyServer(claimed.read_only);
    if (!claimed?.claimed) {
      client.release(true);
      return undefined;
    }
    pid = claimed.pid;
  } catch (error) {
    client.release(true);
    throw toLockError(error, 'claimAppId', false);
  }
  const session: InstanceSession = {
    get alive() {
      return alive;
    },
    pid,
    close() {
      alive = false;
      if (!open) return;
      open = false;
      lane.detach(client);
      client.release(true); // destroying the connection frees the instance lock
    },
  };
  // A statement of the hot path that timed out may still run on the connection: the session ends with it.
  lane.attach(client, () => alive, () => session.close());
  return session;
}

/**
 * LISTENs on the lock channel of `tables` (one per schema) and reports freed names; a broken connection is reported
 * once as lost.
 */
export async function openListener(
  client: PoolClient,
  callbacks: ListenerCallbacks,
  tables: LockTables = DEFAULT_LOCK_TABLES,
): Promise<LockListener> {
  let open = true;
  const channel = lockNotifyChannel(tables);
  const onNotification = (message: { channel: string; payload?: string }) => {
    if (message.channel !== channel) return;
    const payload = message.payload;
    if (payload?.startsWith(HANDOVER_MARK)) {
      // chr(1) waiter stamp rows' end (see HANDED_OVER): a waiter id has no space.
      const [waiter, stamp, rowsEnd] = payload.slice(HANDOVER_MARK.length).split(' ');
      if (waiter && stamp && rowsEnd) callbacks.handedOver(waiter, Number(stamp), Number(rowsEnd));
      return;
    }
    callbacks.freed(!payload || payload === '*' ? '*' : payload.split('\n'));
  };
  const close = () => {
    if (!open) return;
    open = false;
    client.off('notification', onNotification);
    client.off('error', onLost);
    client.off('end', onLost);
    client.on('error', () => undefined); // it may still emit one (the server ending it) while it is destroyed
    client.release(true);
  };
  const onLost = () => {
    if (!open) return;
    close();
    callbacks.lost();
  };
  client.on('notification', onNotification);
  client.on('error', onLost);
  client.on('end', onLost);
  try {
    // The default channel as ever (operators find `LISTEN nestjs_db_locks` in pg_stat_activity); a schema's is quoted.
    await client.query(`LISTEN ${tables.schema === undefined ? channel : `"${channel}"`}`);
  } catch (error) {
    close();
    throw toLockError(error, 'listen', false);
  }
  return { close };
}
