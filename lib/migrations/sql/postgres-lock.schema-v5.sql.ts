/**
 * The fifth schema version: forced release, audited. `locking_log` gets `ended_by` and `end_reason` (who freed a grant
 * that was not theirs, and why), a grant so freed ends with the status `FORCED`, and `locking_waiters` records when
 * each waiter registered. `locking_force_release` frees any live grant, taking its rows in the order of release, reaper
 * and recovery (the log row first, then the lock rows: see `postgres-lock.schema-v3.sql.ts`), and wakes the waiters
 * of its names. The engine's other functions are unchanged: an instance of the previous version keeps working on
 * this schema (the new columns are nullable or have a default).
 * @internal
 */
import { LIVE } from '../../store/lock-sql.constants.js';

/**
 * Frees the live grant `p_stamp` of any app: its log row turns FORCED with the actor and the reason (locked first; a
 * business transaction holding it is waited for), then its lock rows go and the waiters of its names are woken.
 * Returns the grant that was freed, or no row when no live grant has that stamp. Its holder learns it on its next
 * renewal (the grant is no longer live), and `markBusinessDone` and `releaseLocks` find it gone.
 */
const FORCE_RELEASE_FUNCTION = `CREATE FUNCTION locking_force_release(p_stamp bigint, p_actor text, p_reason text)
   RETURNS TABLE (app_id text, instance text, lock_names text[], lock_modes text[], held_for_ms float8)
   LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_log locking_log%ROWTYPE;
   BEGIN
     UPDATE locking_log l SET status = 'FORCED', ended = now(), ended_by = p_actor, end_reason = p_reason,
            version = l.version + 1
      WHERE l.stamp = p_stamp AND l.status IN ${LIVE}
     RETURNING l.* INTO v_log;
     IF NOT FOUND THEN
       RETURN;
     END IF;
     DELETE FROM locking k WHERE k.stamp = p_stamp;
     PERFORM locking_notify_freed(v_log.lock_names::text[]);
     RETURN QUERY SELECT v_log.app_id::text, v_log.instance::text, v_log.lock_names::text[], v_log.lock_modes::text[],
       (extract(epoch FROM v_log.ended - v_log.acquired) * 1000)::float8;
   END
   $fn$`;

/** Installs the fifth schema version. */
export const UPGRADE_LOCK_SCHEMA_V5: readonly string[] = [
  `ALTER TABLE locking_log ADD COLUMN ended_by varchar(200), ADD COLUMN end_reason varchar(500)`,
  `ALTER TABLE locking_waiters ADD COLUMN registered timestamptz NOT NULL DEFAULT now()`,
  FORCE_RELEASE_FUNCTION,
];

/**
 * Drops the function and the columns; a FORCED grant becomes REAPED (freed by somebody other than its holder), the
 * closest status the previous versions know.
 */
export const DOWNGRADE_LOCK_SCHEMA_V5: readonly string[] = [
  `DROP FUNCTION IF EXISTS locking_force_release(bigint, text, text)`,
  `UPDATE locking_log SET status = 'REAPED' WHERE status = 'FORCED'`,
  `ALTER TABLE locking_waiters DROP COLUMN IF EXISTS registered`,
  `ALTER TABLE locking_log DROP COLUMN IF EXISTS end_reason, DROP COLUMN IF EXISTS ended_by`,
];
