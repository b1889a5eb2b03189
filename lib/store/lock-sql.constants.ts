/**
 * Constants that the SQL of both dialects and the migrations share.
 * @internal
 */

/** The LISTEN/NOTIFY channel on which freed lock names are announced (PostgreSQL). */
export const NOTIFY_CHANNEL = 'nestjs_db_locks';

/** Statuses of a grant that still holds its locks, as an SQL list. */
export const LIVE = `('ACQUIRED', 'BUSINESS_DONE')`;

/** How the tables spell the modes. */
export const MODE_CODE = { read: 'R', write: 'W' } as const;
