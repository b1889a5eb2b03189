import { NOW } from './mysql-lock.queries.sql.js';

/**
 * The statements of the app id's claim on a Galera cluster (MariaDB Galera, Percona XtraDB Cluster), parameterised
 * (`?`). `GET_LOCK` holds on the node that took it only, so on a cluster the instance also holds a lease in its row of
 * `locking_instances` (`lease_holder`, `lease_node`, `lease_until`: migration `MysqlCertifiedWrites1797200000000`),
 * written, so that two claims on two nodes conflict at certification. The columns are described there.
 * @internal
 */


/** The node the session is connected to: its host name and port (MariaDB and MySQL alike). */
const NODE = `CONCAT(@@hostname, ':', @@port)`;

/** `NOW` plus ? milliseconds. */
const UNTIL = `${NOW} + INTERVAL (? * 1000) MICROSECOND`;

/**
 * ? app id, ? instance, ? holder (a token of the claiming session), ? lease (ms): the lease of the app id, taken when it
 * is free: no holder, this holder, a lease that has ended, or a holder whose session was on this very node (the
 * caller holds the app id's `GET_LOCK` here, so that session is gone). A live lease of another holder is left as it
 * is. MySQL assigns left to right, each seeing the ones before: `lease_holder` first, the others follow it. Then
 * `SELECT_LEASE_HOLDER` says who holds it.
 */
export const CLAIM_LEASE = `INSERT INTO locking_instances (app_id, instance, process_key, claimed, lease_holder, lease_node, lease_until)
  VALUES (?, ?, NULL, ${NOW}, ?, ${NODE}, ${UNTIL})
  ON DUPLICATE KEY UPDATE
    lease_holder = IF(lease_holder IS NULL OR lease_holder = VALUES(lease_holder) OR lease_until IS NULL
                      OR lease_until < ${NOW} OR lease_node <=> VALUES(lease_node), VALUES(lease_holder), lease_holder),
    lease_until = IF(lease_holder = VALUES(lease_holder), VALUES(lease_until), lease_until),
    lease_node = IF(lease_holder = VALUES(lease_holder), VALUES(lease_node), lease_node),
    claimed = IF(lease_holder = VALUES(lease_holder), VALUES(claimed), claimed)`;

/** ? app id → the lease's holder, and how long its lease has left (ms; negative: over). */
export const SELECT_LEASE_HOLDER = `SELECT lease_holder, lease_node, instance,
    TIMESTAMPDIFF(MICROSECOND, ${NOW}, lease_until) / 1000 AS left_ms
  FROM locking_instances WHERE app_id = ?`;

/**
 * ? lease (ms), ? app id, ? holder: renews the lease (one row changed), as long as this holder has it; `claimed` moves
 * too, so that the row of a live instance never looks old enough to be retired.
 */
export const RENEW_LEASE = `UPDATE locking_instances SET lease_until = ${UNTIL}, claimed = ${NOW}
  WHERE app_id = ? AND lease_holder = ?`;

/** ? app id, ? holder: gives the lease up (the instance closes). */
export const END_LEASE = `UPDATE locking_instances SET lease_until = NULL, lease_holder = NULL
  WHERE app_id = ? AND lease_holder = ?`;
