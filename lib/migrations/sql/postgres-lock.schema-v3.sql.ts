/**
 * The third schema version: releases take their rows in the order of the reaper and of start-up recovery, the log row
 * first and then the lock rows. The second version deleted the lock rows first, then updated the log row; a reaper
 * holding that log row (`FOR UPDATE`) and waiting to delete the same lock rows made a deadlock, which PostgreSQL
 * breaks only after `deadlock_timeout` (1 s by default).
 * @internal
 */
import * as Fragment from './postgres-lock.fragments.sql.js';
import { LIVE } from '../../store/lock-sql.constants.js';
import {
  notifyWaitersOf,
  RELEASE_FUNCTION_V2,
  RELEASE_ONE_FUNCTION,
  RELEASE_SETTINGS,
} from './postgres-lock.schema-v2.sql.js';

/**
 * Turns the live log row of `v_stamp` of this app RELEASED (locking it first, as the reaper does), its names into
 * `v_names`, then deletes its lock rows. FOUND (of the update) when there was one.
 */
export const RELEASE_GRANT = `UPDATE locking_log SET status = 'RELEASED', ended = now(), version = version + 1
        WHERE stamp = v_stamp AND app_id = p_app_id AND status IN ${LIVE}
       RETURNING lock_names INTO v_names;
       IF FOUND THEN
         DELETE FROM locking WHERE stamp = v_stamp;
       END IF;`;

/**
 * `locking_release` whose loop ends each grant with `grant` (RELEASE_GRANT or a later version's), then `freed` of the
 * names freed (`v_freed`); `variables`: declarations a later version adds. @internal
 */
export const releaseFunction = (grant: string, freed: (names: string) => string, variables = ''): string =>
  `CREATE OR REPLACE FUNCTION ${Fragment.RELEASE_SIGNATURE}
   DECLARE
     v_stamp    bigint;
     v_names    text[];
     v_freed    text[] := '{}';
     v_released bigint[] := '{}';${variables}
   BEGIN
${RELEASE_SETTINGS}
     FOREACH v_stamp IN ARRAY p_stamps LOOP
       ${grant}
       IF v_names IS NOT NULL THEN
         v_released := v_released || v_stamp;
         v_freed := v_freed || v_names;
         v_names := NULL;
       END IF;
     END LOOP;
     ${freed('v_freed')}
     RETURN v_released;
   END
   $fn$`;

/** `locking_release_one` likewise (`freed` of `v_names`). @internal */
export const releaseOneFunction = (grant: string, freed: (names: string) => string, variables = ''): string =>
  `CREATE OR REPLACE FUNCTION locking_release_one(p_app_id text, p_stamp bigint, p_async boolean)
   RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_stamp ALIAS FOR p_stamp;
     v_names text[];${variables}
   BEGIN
${RELEASE_SETTINGS}
     ${grant}
     IF v_names IS NULL THEN
       RETURN false;
     END IF;
     ${freed('v_names')}
     RETURN true;
   END
   $fn$`;

/** `locking_release`: as in the second version, with the log row taken before the lock rows. */
export const RELEASE_FUNCTION_V3 = releaseFunction(RELEASE_GRANT, notifyWaitersOf);

/** `locking_release_one`: as in the second version, with the log row taken before the lock rows. */
export const RELEASE_ONE_FUNCTION_V3 = releaseOneFunction(RELEASE_GRANT, notifyWaitersOf);

/** Installs the third schema version. */
export const UPGRADE_LOCK_SCHEMA_V3: readonly string[] = [RELEASE_FUNCTION_V3, RELEASE_ONE_FUNCTION_V3];

/** Puts the second version back. */
export const DOWNGRADE_LOCK_SCHEMA_V3: readonly string[] = [RELEASE_FUNCTION_V2, RELEASE_ONE_FUNCTION];
