/**
 * The eighth schema version: the group check looks up each of its names in the index. `locking_try_acquire`
 * (`CREATE OR REPLACE`, same signature) asks whether a name of a group of several locks has a lock row with a scalar
 * subquery instead of `EXISTS`; the decisions are the seventh version's, name for name. `down` restores the seventh
 * version's function. Safe while instances run: a call in flight finishes with the version it started with.
 * @internal
 */
import { CHECK_NAME_IN_ORDER, TRY_ACQUIRE_FUNCTION_V7, waiterBefore } from './postgres-lock.schema-v7.sql.js';
import { groupBusy, tryAcquireFunctionV6 } from './postgres-lock.schema-v6.sql.js';

/*
 * PROBE_EACH_NAME: the planner may run an `EXISTS` correlated on an equality as a hashed subplan, which reads the
 * whole `locking` table once per call and looks the names up in the hash. Whether it does depends on the table's
 * statistics when the plan is made; when it did, every grant of a group read every lock row of the database: its
 * cost grew with the locks the whole fleet holds and, through a bitmap scan (which never marks an index entry dead),
 * with every row released since the last VACUUM (issue 41: with 2 000 locks held elsewhere, 2 014 index entries read
 * per grant of 4 names; on a table not yet analyzed, a group of 32 locks went from 2.5 to 4.7 ms within 3 000 grants,
 * reading 96 000 dead entries each). A scalar subquery is never hashed: each name is one probe of the primary key's
 * `lock_name` prefix, by an index scan that marks the dead entries it meets, so the next probe skips them.
 */

/** Whether the request `r`'s name has a lock row: one index probe per name (see PROBE_EACH_NAME). */
export const HELD_BY_PROBE = '(SELECT true FROM locking l WHERE l.lock_name = r.name LIMIT 1) IS NOT NULL';

/** `locking_try_acquire` (a batch of groups), eighth version. */
const TRY_ACQUIRE_FUNCTION_V8 = tryAcquireFunctionV6(
  CHECK_NAME_IN_ORDER,
  groupBusy(waiterBefore('r.name', 'r.mode'), HELD_BY_PROBE),
);

/** Installs the eighth schema version. */
export const UPGRADE_LOCK_SCHEMA_V8: readonly string[] = [TRY_ACQUIRE_FUNCTION_V8];

/** Puts the seventh version's batch function back. */
export const DOWNGRADE_LOCK_SCHEMA_V8: readonly string[] = [TRY_ACQUIRE_FUNCTION_V7];
