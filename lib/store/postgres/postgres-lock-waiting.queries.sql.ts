/**
 * Statements of the waiting layer that are not part of the hot path (the waiter statements proper are in
 * `postgres-lock.queries.sql.ts`).
 * @internal
 */

/**
 * $1 names, $2 modes ('R'/'W'), $3 default read permits, $4 default write permits → the requests among them that are
 * not available now, each with `busy` = 'held' (held elsewhere, in the other mode or up to its permits) or
 * 'writer-waiting' (a read that would yield to a waiting writer), and `held_mode` the mode the name is held in (one
 * mode at a time), null when not held. A snapshot for a log line, never for a decision.
 */
export const SELECT_BUSY_LOCKS = `SELECT name, mode, busy, held_mode FROM (
  SELECT r.name, r.mode, (SELECT min(l.mode) FROM locking l WHERE l.lock_name = r.name) AS held_mode,
    CASE
      WHEN EXISTS (SELECT 1 FROM locking l WHERE l.lock_name = r.name AND l.mode <> r.mode)
        OR (SELECT count(*) FROM locking l WHERE l.lock_name = r.name AND l.mode = r.mode)
           >= coalesce((SELECT p.permits FROM locking_permissions p WHERE p.lock_name = r.name AND p.mode = r.mode),
                       CASE r.mode WHEN 'W' THEN $4::integer ELSE $3::integer END) THEN 'held'
      WHEN r.mode = 'R' AND EXISTS (SELECT 1 FROM locking_waiters w WHERE w.lock_name = r.name AND w.mode = 'W'
                                      AND w.expires > now()) THEN 'writer-waiting'
    END AS busy
  FROM unnest($1::text[], $2::text[]) AS r(name, mode)) AS checked
 WHERE busy IS NOT NULL ORDER BY name`;
