/**
 * The statements of the doorbells on MySQL and MariaDB (`mysql-doorbell.session.ts` rings in, `mysql-doorbell.ringer.ts`
 * rings). The table and the release that names the doorbells to ring are in
 * `lib/migrations/sql/mysql-lock-doorbells.sql.ts`.
 * @internal
 */

/** What every doorbell's sleeping statement starts its comment with (the library and the role). */
export const DOORBELL_MARK = 'nestjs-db-locks doorbell';

/** The connection id of the doorbell's own session. */
export const SELECT_CONNECTION_ID = 'SELECT CONNECTION_ID() AS id';

/** ? app id, ? connection id, ? tag, then connection id and tag again: this instance's doorbell now. */
export const UPSERT_DOORBELL = `INSERT INTO locking_doorbells (app_id, connection_id, tag, opened)
  VALUES (?, ?, ?, UTC_TIMESTAMP(6))
  ON DUPLICATE KEY UPDATE connection_id = ?, tag = ?, opened = UTC_TIMESTAMP(6)`;

/** ? app id, ? connection id: the doorbell's row goes with it (unless a newer doorbell replaced it). */
export const DELETE_DOORBELL = `DELETE FROM locking_doorbells WHERE app_id = ? AND connection_id = ?`;

/**
 * The doorbell's sleep, `seconds` long, tagged with `tag` (hex: a token, never a value of the user): `rung` is 1 when a
 * `KILL QUERY` interrupted it (MariaDB and MySQL answer 1 then, or fail with error 1317), 0 when it slept its time.
 */
export const doorbellSleep = (tag: string, seconds: number): string =>
  `SELECT /* ${DOORBELL_MARK} ${tag} */ SLEEP(${Math.max(1, Math.trunc(seconds))}) AS rung`;

/**
 * Connection ids `?…` → those that run their doorbell's tagged sleep right now: the only threads a ring may
 * interrupt. A stale id (the doorbell gone, or the server restarted and the id given to another session) runs
 * something else and is left alone. Threads of other users are listed only with the PROCESS privilege (the ring then
 * does not happen: the waiters poll).
 */
export const selectRingable = (count: number): string =>
  `SELECT p.ID AS id FROM information_schema.PROCESSLIST p
     JOIN locking_doorbells d ON d.connection_id = p.ID
    WHERE p.ID IN (${Array.from({ length: count }, () => '?').join(', ')})
      AND CONVERT(p.INFO USING utf8mb4) COLLATE utf8mb4_bin
          LIKE CONCAT('SELECT /* ${DOORBELL_MARK} ', d.tag, ' */ SLEEP(%')`;

/** Interrupts the statement of thread `id` (a number read from the server; KILL takes no placeholder). */
export const killQuery = (id: number): string => `KILL QUERY ${Math.trunc(id)}`;


/** ? app id: the doorbell's rings row (Galera), made if missing. */
export const ADD_RINGS_ROW = `INSERT IGNORE INTO locking_doorbell_rings (app_id, rings) VALUES (?, 0)`;

/** Opens the transaction that holds the rings row's lock while the doorbell sleeps (Galera). */
export const BEGIN_ARMED = 'START TRANSACTION';

/**
 * ? app id: locks the doorbell's rings row until a ring from another node writes it (the cluster then aborts this
 * transaction, and the sleep under way with it); its count of rings. Skipped when another session holds it (a doorbell
 * of this app given up, whose sleep the server has not ended yet): the doorbell sleeps unarmed and tries again.
 */
export const ARM_RINGS_ROW = `SELECT rings FROM locking_doorbell_rings WHERE app_id = ? FOR UPDATE SKIP LOCKED`;

/**
 * Connection ids `?…` (a release's doorbells that no thread of this node runs) → the app ids of their rings rows that
 * no session of this node holds (the others are this node's doorbells, rung by `KILL QUERY`), locked until the ring
 * commits. Connection ids are the node's own, so an id may name a doorbell of another node that the release did not
 * mean: that one wakes for nothing (one more attempt of its waiters).
 */
export const selectRemoteRings = (count: number): string =>
  `SELECT app_id FROM locking_doorbell_rings
    WHERE app_id IN (SELECT app_id FROM locking_doorbells WHERE connection_id IN (${Array.from({ length: count }, () => '?').join(', ')}))
    FOR UPDATE SKIP LOCKED`;

/** App ids `?…`: rings their doorbells on other nodes (a write the cluster replicates; see `ARM_RINGS_ROW`). */
export const ringRows = (count: number): string =>
  `UPDATE locking_doorbell_rings SET rings = rings + 1 WHERE app_id IN (${Array.from({ length: count }, () => '?').join(', ')})`;
