/**
 * Fragments of PL/pgSQL shared by the versions of the engine's functions (`postgres-lock.schema.sql.ts` holds the
 * first versions, `postgres-lock.schema-v2.sql.ts` the second). Each fragment ends where the next line starts. They
 * are part of shipped migrations: never change one; a version that needs other text writes its own.
 * @internal
 */

/** Namespace (first key) of the transaction advisory locks taken by `locking_try_acquire`, one per lock name. */
export const ADVISORY_NAMESPACE = 1_819_239_275; // 'lock' in ASCII

/** Name, parameters and kind of `locking_try_acquire`, up to the start of its body. @internal */
export const TRY_ACQUIRE_SIGNATURE = `locking_try_acquire(p_app_id text, p_instance text, p_names text[], p_modes text[],
                                      p_group_ends integer[], p_waiters text[], p_default_read integer,
                                      p_default_write integer, p_lease_ms integer)
   RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $fn$`;

/** Name, parameters and kind of `locking_release`, up to the start of its body. @internal */
export const RELEASE_SIGNATURE = `locking_release(p_app_id text, p_stamps bigint[], p_async boolean)
   RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $fn$`;

/** Variables of `locking_try_acquire` that every version declares (a version adds its own after them). @internal */
export const TRY_ACQUIRE_VARIABLES = `     v_key    integer;
     v_from   integer := 1;
     v_to     integer;
     v_stamp  bigint;
     v_stamps bigint[] := '{}';
     v_group  integer := 0;
     v_waiter text;`;

/** Refuses to run outside READ COMMITTED: the checks rely on a fresh snapshot per statement. @internal */
export const REQUIRE_READ_COMMITTED = `     IF current_setting('transaction_isolation') <> 'read committed' THEN
       RAISE EXCEPTION 'locking_try_acquire needs READ COMMITTED, the session uses %',
         current_setting('transaction_isolation') USING ERRCODE = 'LK001';
     END IF;`;

/** The variables of the per-name (or per-group) check that the batch function's versions declare after theirs. @internal */
export const CHECK_VARIABLES = `     v_name    text;
     v_mode    text;
     v_permits bigint;
     v_busy    boolean;`;

/**
 * The batch function's first statements: refuses modes other than R and W and isolation levels other than READ
 * COMMITTED, then turns sequential scans off for the call's transaction. @internal
 */
export const CHECK_BATCH_CALL = `     -- The tables have no CHECK on these columns (see DROP_HOT_PATH_CHECKS): the modes are checked here.
     IF NOT p_modes <@ ARRAY['R', 'W'] THEN
       RAISE EXCEPTION 'locking_try_acquire: modes must be R or W, got %', p_modes USING ERRCODE = '22023';
     END IF;
${REQUIRE_READ_COMMITTED}
     PERFORM set_config('enable_seqscan', 'off', true); -- see INDEX_SCANS_ONLY`;

/** Takes the batch's advisory locks in sorted key order, then opens the loop over its groups. @internal */
export const LOCK_NAMES_THEN_EACH_GROUP = `     IF cardinality(p_names) = 1 THEN
       -- The most common call, one lock: no sort needed (a simple expression, no query).
       PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, hashtext(p_names[1]));
     ELSE
       FOR v_key IN SELECT DISTINCT hashtext(n) AS k FROM unnest(p_names) AS n ORDER BY k LOOP
         PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, v_key);
       END LOOP;
     END IF;
     -- Group i is p_names[previous end + 1 .. p_group_ends[i]], in arrival order.
     FOREACH v_to IN ARRAY p_group_ends LOOP
       v_group := v_group + 1;
       v_waiter := p_waiters[v_group];`;

/** After a grant: the waiter rows of its caller (`v_waiter`, null when it did not wait) go. @internal */
export const DROP_WAITER_ROWS = `         IF v_waiter IS NOT NULL THEN
           DELETE FROM locking_waiters WHERE waiter = v_waiter;
         END IF;`;

/** After a group's rows are inserted: drops its waiter rows, records its stamp, closes the loop and the function. @internal */
export const RECORD_GRANT_AND_NEXT_GROUP = `${DROP_WAITER_ROWS}
         v_stamps := v_stamps || v_stamp;
       END IF;
       v_from := v_to + 1;
     END LOOP;
     RETURN v_stamps;
   END
   $fn$`;

/**
 * The one-lock acquisition's body before its name's advisory lock: its variables, the mode and isolation checks, index
 * scans only. @internal
 */
export const ONE_LOCK_CHECKED_CALL = `   RETURNS bigint LANGUAGE plpgsql VOLATILE AS $fn$
   DECLARE
     v_name    ALIAS FOR p_name;
     v_mode    ALIAS FOR p_mode;
     v_waiter  ALIAS FOR p_waiter;
     v_stamp   bigint;
     v_permits bigint;
     v_busy    boolean;
   BEGIN
     IF v_mode IS NULL OR v_mode NOT IN ('R', 'W') THEN
       RAISE EXCEPTION 'locking_try_acquire: modes must be R or W, got %', v_mode USING ERRCODE = '22023';
     END IF;
${REQUIRE_READ_COMMITTED}
     PERFORM set_config('enable_seqscan', 'off', true); -- see INDEX_SCANS_ONLY`;

/** The advisory lock of the one-lock acquisition's name. @internal */
export const LOCK_ONE_NAME = `     PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, hashtext(v_name));`;

/**
 * The one-lock acquisition's body up to its name's advisory lock: its variables, the mode and isolation checks, index
 * scans only. @internal
 */
export const ONE_LOCK_CALL = `${ONE_LOCK_CHECKED_CALL}
${LOCK_ONE_NAME}`;

/**
 * The batch acquisition's body (sixth version on) up to the start of its loop over groups: its variables, its checks,
 * the batch's advisory locks in one statement in sorted key order. @internal
 */
export const BATCH_CALL_THEN_EACH_GROUP = `   DECLARE
${TRY_ACQUIRE_VARIABLES}
${CHECK_VARIABLES}
   BEGIN
${CHECK_BATCH_CALL}
     IF cardinality(p_names) = 1 THEN
       PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, hashtext(p_names[1]));
     ELSE
       -- Several names: plan this call's statements once (see GENERIC_PLANS).
       PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
       -- Every key in one statement, in ascending order: the sorted subquery hands them to the calls one by one.
       PERFORM pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, keys.k)
          FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(p_names) AS n ORDER BY 1) AS keys;
     END IF;
     -- Group i is p_names[previous end + 1 .. p_group_ends[i]], in arrival order.
     FOREACH v_to IN ARRAY p_group_ends LOOP
       v_group := v_group + 1;
       v_waiter := p_waiters[v_group];`;
